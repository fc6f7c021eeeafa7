"""A dual encoder trained with in-batch negatives: sentence vectors for semantic search.

One shared encoder embeds both sides of each pair; the loss is a softmax over the `B x B`
cosine similarities of a batch, whose right answer for row `i` is column `i`. It trains only
through `train` (the `dual_encoder` recipe, `keras-transformer train --architecture
dual-encoder`); `train_dual_encoder` is that run from Python, returning its `SentenceEncoder`."""

from keras_transformer.data.batching.contrastive import pair_dataset
from keras_transformer.errors import UserInputError
from keras_transformer.inference.sentence_encoder import SentenceEncoder, load_sentence_encoder
from keras_transformer.layers import InBatchSimilarity
from keras_transformer.models.dual_encoder import build_dual_encoder
from keras_transformer.training.config import TrainConfig
from keras_transformer.training.run import train

__all__ = [
    "InBatchSimilarity",
    "build_dual_encoder",
    "load_sentence_encoder",
    "pair_dataset",
    "train_dual_encoder",
]


def train_dual_encoder(config: TrainConfig) -> tuple[SentenceEncoder, dict]:
    """`train(config)` of a dual-encoder run, then its `SentenceEncoder`.

    The run is the command line's `keras-transformer train --architecture dual-encoder`: a
    joint WordPiece vocabulary of the training pairs, Adam at a constant 1e-3 unless
    `learning_rate` says otherwise, the best checkpoint by validation loss, and retrieval
    accuracy on the test pairs in `metrics.json`, all in `config.run_dir`.

    Args:
        config: a `TrainConfig` with `architecture="dual-encoder"` and a pair task.

    Returns:
        `(SentenceEncoder, metrics)`: the run's encoder (`load_sentence_encoder(run_dir)`) and
        its `metrics.json`.

    Raises:
        UserInputError: `config` trains another architecture.
    """
    if not isinstance(config, TrainConfig) or config.architecture != "dual-encoder":
        received = getattr(config, "architecture", type(config).__name__)
        raise UserInputError(
            "train_dual_encoder takes a TrainConfig(architecture='dual-encoder', ...); "
            f"received {received!r}."
        )
    metrics = train(config)
    return load_sentence_encoder(config.run_dir), metrics
