"""What tracing a tokenizer's SavedModel functions at save time, not at construction, saves.

`WordPieceTokenizer` traces `detokenize` and `lookup` for three id layouts (dense int64 and
int32, ragged int64) so that a SavedModel of it runs them. Until this change the constructor
traced them, for every tokenizer made: two a training run (`learn`), two a `translate`,
`export` or `attention` command (`load`), though only `export` saves one. Now
`tf.saved_model.save` asks for them (`_trackable_children`). In one process, taking turns,
this builds a tokenizer from the same vocabulary both ways and prints the seconds of each:

    python benchmarks/tokenizer_startup.py [--rounds 5] [--vocab-size 2000]

"eager" is the constructor followed by the six traces it used to make; "lazy" is the
constructor alone. The last lines save one of each as a SavedModel and checks that both
reloaded tokenizers detokenize dense and ragged ids alike, with the seconds of each save.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--vocab-size", type=int, default=2000)
    args = parser.parse_args(argv)

    from keras_transformer._quiet import import_tensorflow_quietly, quiet_native_logs

    quiet_native_logs(force=True)
    import_tensorflow_quietly()
    import tensorflow as tf

    from keras_transformer.data import WordPieceTokenizer, load_task

    task = load_task("numbers", num_train=2000, seed=0)
    learned = WordPieceTokenizer.learn([s for s, _ in task.train], vocab_size=args.vocab_size)
    vocab = learned.vocabulary
    specs = [tf.TensorSpec([None, None], dtype) for dtype in (tf.int64, tf.int32)]
    specs.append(tf.RaggedTensorSpec([None, None], tf.int64, ragged_rank=1))

    def build(eager: bool) -> tuple[float, WordPieceTokenizer]:
        start = time.perf_counter()
        tokenizer = WordPieceTokenizer(vocab)
        if eager:  # what the constructor did before
            for spec in specs:
                tokenizer.detokenize.get_concrete_function(spec)
                tokenizer.lookup.get_concrete_function(spec)
        return time.perf_counter() - start, tokenizer

    seconds = {True: [], False: []}
    for _ in range(args.rounds):
        for eager in (True, False):
            seconds[eager].append(build(eager)[0])
    eager, lazy = statistics.median(seconds[True]), statistics.median(seconds[False])
    print(f"vocabulary of {len(vocab)} pieces, {args.rounds} rounds")
    print(f"eager (traced in the constructor): median {eager:.3f} s a tokenizer")
    print(f"lazy (traced when saved):          median {lazy:.3f} s a tokenizer")
    print(f"construction {eager / lazy:.1f}x faster; {eager - lazy:.2f} s saved a tokenizer")

    texts = [t for _, t in task.test[:8]]
    with tempfile.TemporaryDirectory() as tmp:
        results = []
        for eager in (True, False):
            tokenizer = build(eager)[1]
            start = time.perf_counter()
            tf.saved_model.save(tokenizer, f"{tmp}/{eager}")
            saved = time.perf_counter() - start
            reloaded = tf.saved_model.load(f"{tmp}/{eager}")
            ids = reloaded.tokenize(tf.constant(texts))
            dense = [s.decode() for s in reloaded.detokenize(ids.to_tensor()).numpy()]
            ragged = [s.decode() for s in reloaded.detokenize(ids).numpy()]
            results.append((dense, ragged))
            print(f"{'eager' if eager else 'lazy '}: tf.saved_model.save {saved:.2f} s")
        same = results[0] == results[1] and results[0][0] == results[0][1]
        print(f"reloaded SavedModels detokenize dense and ragged ids alike: {same}")


if __name__ == "__main__":
    main()
