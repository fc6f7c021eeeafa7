"""What building the optimizer before `fit` saves on a run's first epoch.

Keras 3 on TensorFlow makes Adam's moments inside the first traced training step when nothing
built them before; a variable made while a `tf.function` traces makes TensorFlow trace the
function again, so the step is traced twice. `fitting.build_optimizer` (called by
`compile_model`) makes them at compile time. In one process, taking turns, this fits the same
small Transformer for one epoch both ways and prints the seconds of that epoch and how many times
`train_step` was traced:

    python benchmarks/first_epoch.py [--rounds 3] [--num-layers 1] [--d-model 16]

The losses of both ways are printed too: building early changes no number.
"""

from __future__ import annotations

import argparse
import statistics
import time


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--num-layers", type=int, default=1)
    parser.add_argument("--d-model", type=int, default=16)
    parser.add_argument("--steps", type=int, default=4, help="batches in the epoch")
    args = parser.parse_args(argv)

    import keras
    import numpy as np

    from keras_transformer.models import build_transformer
    from keras_transformer.training.fitting import MaskedAccuracy, MaskedLoss, build_optimizer
    from keras_transformer.training.optimizer import paper_adam

    traces = {"count": 0}
    train_step = keras.Model.train_step

    def counted(self, data):
        traces["count"] += 1
        return train_step(self, data)

    keras.Model.train_step = counted
    rng = np.random.default_rng(0)
    batch, length, vocab = 32, 24, 200
    sources = rng.integers(1, vocab, (batch * args.steps, length))
    targets = rng.integers(1, vocab, (batch * args.steps, length + 1))
    inputs, labels = {"source": sources, "target": targets[:, :-1]}, targets[:, 1:]

    def one_epoch(build_first: bool) -> tuple[float, int, float]:
        keras.utils.set_random_seed(0)
        model = build_transformer(
            vocab,
            vocab,
            num_layers=args.num_layers,
            d_model=args.d_model,
            num_heads=2,
            dff=2 * args.d_model,
            max_length=length + 1,
        )
        model.compile(optimizer=paper_adam(1e-3), loss=MaskedLoss(), metrics=[MaskedAccuracy()])
        traces["count"] = 0
        start = time.perf_counter()
        if build_first:
            build_optimizer(model)
        history = model.fit(inputs, labels, batch_size=batch, epochs=1, verbose=0, shuffle=False)
        return time.perf_counter() - start, traces["count"], history.history["loss"][0]

    seconds = {True: [], False: []}
    for _ in range(args.rounds):
        for build_first in (False, True):
            took, traced, loss = one_epoch(build_first)
            seconds[build_first].append(took)
            way = "built before fit " if build_first else "built inside fit "
            print(f"{way}: first epoch {took:5.2f} s, train_step traced {traced}x, loss {loss:.6f}")
    before, after = statistics.median(seconds[False]), statistics.median(seconds[True])
    print(
        f"median first epoch: {before:.2f} s inside fit, {after:.2f} s built before: "
        f"{before / after:.2f}x"
    )


if __name__ == "__main__":
    main()
