"""What every recipe shares: the `Recipe` base class and learning a vocabulary."""

import logging
from typing import ClassVar

import keras

from keras_transformer import data
from keras_transformer.choices import DATA_SIZED_TASKS
from keras_transformer.training.datasets import check_full_batch
from keras_transformer.training.plan import Batches, RunPlan

logger = logging.getLogger(__name__)


class Recipe:
    """What one kind of run adds to the shared stages of `train`; it reads its `RunPlan`.

    A recipe is made in two steps. Before the plan, its class gives what the plan needs:
    `vocabularies` (learnt, or taken from the run `--init-from` names) and `make_batches`
    (whose count sets an epoch's steps). Then `Recipe(plan, task, init, tokenizers, batches)`
    builds the model, scores it and draws its figures.

    Class attributes:
        LEARNING_RATE: the recipe's constant rate where `--learning-rate` is not given (None:
            the planned or the paper's schedule; `plan.resolve_plan` decides).
        KEEPS_LAST: `choose_weights` picks between the best checkpoint and the last weights
            (`fitting.fit_run(keep_last=True)`).
        REMEASURES: `remeasure_evaluation` times the evaluation again near a budget's end.
        EVALUATING: what the run is doing after training (`RunClock.stage`, named by the line
            an interruption prints).
    """

    LEARNING_RATE: ClassVar[float | None] = None
    KEEPS_LAST: ClassVar[bool] = False
    REMEASURES: ClassVar[bool] = False
    EVALUATING: ClassVar[str] = "while saving and evaluating the model (training is done)"

    def __init__(self, plan: RunPlan, task: data.Task, init, tokenizers: dict, batches: Batches):
        self.plan, self.task, self.init = plan, task, init
        self.tokenizers, self.batches = tokenizers, batches
        self.train_ds, self.val_ds = batches.train, batches.validation
        # Test batches a budget keeps time for (their forward pass).
        self.test_batches = 0 if batches.test is None else int(batches.test.cardinality())

    @staticmethod
    def vocabularies(settings, task: data.Task, init, vocab_size: int) -> dict:
        """The tokenizers of the run, saved under `tokenizers/<name>/`."""
        raise NotImplementedError

    @staticmethod
    def make_batches(settings, task, tokenizers, max_length: int, pad_to_bucket: bool) -> Batches:
        """The training, validation (and test) batches."""
        raise NotImplementedError

    def build(self) -> keras.Model:
        """The model (inside the strategy's scope)."""
        raise NotImplementedError

    @property
    def start_weights(self):
        """What `--init-from` names, whose weights `build` starts from; None without it or with
        `--fresh-weights` (its vocabulary and sizes only)."""
        return None if self.plan.settings.fresh_weights else self.init

    def compile_options(self) -> dict:
        """`loss` and `metrics` of `compile` (none: the masked loss and accuracies)."""
        return {}

    def config_extra(self) -> dict:
        """More entries of `config.json`."""
        return {}

    def evaluate(self, model: keras.Model, fit) -> dict:
        """The figures of `metrics.json`."""
        raise NotImplementedError

    def plot(self, model: keras.Model, plots_dir: str) -> None:
        """Figures besides the curves."""

    def prepare_evaluation(self, model: keras.Model) -> float:
        """Seconds the evaluation's searches will take (compiled and timed before training)."""
        return 0.0

    def remeasure_evaluation(self, model: keras.Model) -> float:
        """The same estimate with the weights trained so far (`REMEASURES`)."""
        raise NotImplementedError

    def choose_weights(self, model: keras.Model, fit) -> dict:
        """Right after training: the weights the run keeps (`KEEPS_LAST`); `metrics.json`
        entries."""
        return {}


def learn_vocabulary(texts: list[str], side: str, vocab_size: int, *, task: str):
    """A WordPiece vocabulary of `vocab_size`; on a data-sized `task` (tsv), a learner that
    falls short tries again with rare pieces and one INFO line (`-v`) says why the size is
    smaller: the corpus has no more pieces, nothing a user needs to do."""
    fill = task in DATA_SIZED_TASKS
    tokenizer = data.WordPieceTokenizer.learn(texts, vocab_size, fill=fill)
    if fill and tokenizer.vocab_size < 0.95 * vocab_size:  # a note (-v): nothing to do
        logger.info(
            "%s: the corpus has only %d distinct pieces; vocabulary %d instead of %d",
            side,
            tokenizer.vocab_size,
            tokenizer.vocab_size,
            vocab_size,
        )
    return tokenizer


def joint_tokenizer(settings, task: data.Task, vocab_size: int, why: str = ""):
    """One WordPiece vocabulary over both sides of the training pairs (which must fill a batch)."""
    texts = [s for s, _ in task.train] + [t for _, t in task.train]
    tokenizer = learn_vocabulary(texts, "joint", vocab_size, task=settings.task)
    check_full_batch(len(task.train) >= settings.batch_size, settings, why)
    return tokenizer
