"""The recipes of `train`: one per kind of run (vocabularies, batches, model, loss, evaluation,
plots), each a `Recipe` class in its own module that reads the run's `RunPlan`.

`recipe_name(settings)` picks one: `translation` (encoder-decoder), `prefix` (decoder-only on
"source [SEP] target"), `it_referent` (`it-referent`, encoder or decoder-only), `sequence`
(encoder classifier on `reviews` / `imdb`), `dual_encoder`, or `masked_lm` (pre-training an
encoder, `PretrainConfig`). `load_data(settings)` reads the examples every recipe takes;
`prepare_recipe` resolves the plan and makes the recipe.
"""

import logging

from keras_transformer import data
from keras_transformer.choices import SEQUENCE_TASKS, TOKEN_TASKS
from keras_transformer.data.tasks.corpus import load_corpus, split_corpus
from keras_transformer.errors import UserInputError
from keras_transformer.training.devices import set_up_devices
from keras_transformer.training.plan import resolve_plan
from keras_transformer.training.pretrain_config import PretrainConfig
from keras_transformer.training.recipes.base import Recipe
from keras_transformer.training.recipes.dual_encoder import DualEncoderRecipe
from keras_transformer.training.recipes.it_referent import ItReferentRecipe
from keras_transformer.training.recipes.masked_lm import MaskedLMRecipe
from keras_transformer.training.recipes.prefix import PrefixRecipe
from keras_transformer.training.recipes.sequence import SequenceRecipe
from keras_transformer.training.recipes.translation import TranslationRecipe

logger = logging.getLogger(__name__)

__all__ = ["RECIPES", "Recipe", "load_data", "prepare_recipe", "recipe_name"]

RECIPES: dict[str, type[Recipe]] = {
    "translation": TranslationRecipe,
    "prefix": PrefixRecipe,
    "it_referent": ItReferentRecipe,
    "sequence": SequenceRecipe,
    "dual_encoder": DualEncoderRecipe,
    "masked_lm": MaskedLMRecipe,
}
"""The recipe of each kind of run (`recipe_name(settings)` picks one)."""


def recipe_name(settings) -> str:
    """The `RECIPES` key of a `TrainConfig` (a `PretrainConfig`: `masked_lm`)."""
    if isinstance(settings, PretrainConfig):
        return "masked_lm"
    if settings.task in TOKEN_TASKS:
        return "it_referent"
    if settings.task in SEQUENCE_TASKS:
        return "sequence"
    names = {"encoder-decoder": "translation", "dual-encoder": "dual_encoder"}
    return names.get(settings.architecture, "prefix")


def prepare_recipe(settings, task: data.Task, init=None, devices=None, seconds_left=None):
    """The run's `Recipe`, its plan resolved (`plan.resolve_plan`; `recipe.plan`). `devices`:
    `devices.set_up_devices(settings)`'s, made here when None."""
    if devices is None:
        devices = set_up_devices(settings)
    kind = recipe_name(settings)
    recipe_type = RECIPES[kind]
    plan, tokenizers, batches = resolve_plan(
        settings, task, init, kind, devices, recipe_type, seconds_left
    )
    return recipe_type(plan, task, init, tokenizers, batches)


def load_data(settings) -> data.Task:
    """The examples of a run, read and checked before any file is written: the task's three
    splits (none may be empty), or for pre-training the corpus split into training and
    validation texts (`Task` pairs `(text, "")`, no test split)."""
    if isinstance(settings, PretrainConfig):
        texts = load_corpus(
            settings.corpus, num_sentences=settings.num_sentences, seed=settings.seed
        )
        train, validation = split_corpus(texts, settings.validation_fraction, settings.seed)
        logger.info(
            "corpus %s: %d training, %d validation texts",
            settings.corpus,
            len(train),
            len(validation),
        )
        pairs = {
            name: [(text, "") for text in part]
            for name, part in (("train", train), ("validation", validation))
        }
        return data.Task(settings.corpus, None, None, **pairs, test=[])
    task = data.load_task(settings.task, **settings.task_options())
    for split in ("train", "validation", "test"):
        if not task.split(split):
            raise UserInputError(
                f"task {task.name!r} has an empty {split} split; every run needs "
                f"training, validation and test examples (raise --num-{split})."
            )
    logger.info(
        "task %s: %d train, %d validation, %d test examples",
        task.name,
        len(task.train),
        len(task.validation),
        len(task.test),
    )
    return task
