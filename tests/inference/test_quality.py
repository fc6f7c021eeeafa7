"""A quality bar for the encoder-decoder `Translator`: a tiny model learns to reverse.

Reversing a sequence of symbols needs every part of the model: the
cross-attention must find the source position to read at each step, and the
decoder's causal mask must hide the next target token during training (else
the model learns to copy its input and fails when it decodes alone). A
1-layer model trained ~10 epochs on 2,000 pairs reaches 0.9-1.0 exact match
on held-out sources through `Translator`; with the decoder's causal mask
switched off it scores 0.0 (checked once by hand), far below the 0.8 bar.
"""

import keras
import numpy as np

from keras_transformer.data import WordPieceTokenizer, make_dataset
from keras_transformer.data.tasks.synthetic import reverse_task
from keras_transformer.inference import Translator
from keras_transformer.models import build_transformer
from keras_transformer.training.losses import MaskedSparseCategoricalCrossentropy
from keras_transformer.training.optimizer import paper_adam

MAX_LENGTH = 10  # [START] + up to 8 symbols + [END]


def test_a_tiny_transformer_learns_to_reverse_through_the_translator():
    keras.utils.set_random_seed(0)
    task = reverse_task(num_train=2000, num_validation=1, num_test=100, seed=0)
    source = WordPieceTokenizer.learn([s for s, _ in task.train], vocab_size=40)
    target = WordPieceTokenizer.learn([t for _, t in task.train], vocab_size=40)
    model = build_transformer(
        source.vocab_size,
        target.vocab_size,
        num_layers=1,
        d_model=32,
        num_heads=2,
        dff=64,
        max_length=MAX_LENGTH,
        dropout=0.0,
    )
    model.compile(paper_adam(0.005), MaskedSparseCategoricalCrossentropy())
    train = make_dataset(task.train, source, target, batch_size=64, max_length=MAX_LENGTH)
    model.fit(train, epochs=10, verbose=0)
    sources = [s for s, _ in task.test]
    references = [t for _, t in task.test]
    assert not set(sources) & {s for s, _ in task.train}  # held out
    predictions = Translator(model, source, target, max_length=MAX_LENGTH)(sources)
    exact = float(np.mean([p == r for p, r in zip(predictions, references, strict=True)]))
    assert exact >= 0.8, (exact, list(zip(sources, predictions, strict=True))[:5])
