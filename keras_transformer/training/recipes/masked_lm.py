"""BERT's masked-language-model pre-training of an encoder (new masks every epoch), on the texts
of `load_data`'s corpus. The fine-tuning comparison that follows is two `train` runs of their own
(`pretraining.pretrain`, `fine_tuning.compare_fine_tuning`)."""

from keras_transformer import data, models
from keras_transformer.data.batching.masking import make_mlm_dataset
from keras_transformer.training.plan import Batches
from keras_transformer.training.pretrain_config import OBJECTIVE
from keras_transformer.training.recipes.base import Recipe


def _texts(task, split: str) -> list[str]:
    return [text for text, _ in task.split(split)]


def _dataset(settings, texts, tokenizer, max_length: int, training: bool):
    return make_mlm_dataset(
        texts,
        tokenizer,
        batch_size=settings.batch_size,
        max_length=max_length,
        seed=settings.seed,
        shuffle=training,
        rate=settings.mask_rate,
    )


class MaskedLMRecipe(Recipe):
    """An encoder that predicts masked pieces (`PretrainConfig`), scored on the held-out
    texts."""

    @staticmethod
    def vocabularies(settings, task, init, vocab_size):
        return {"source": data.WordPieceTokenizer.learn(_texts(task, "train"), vocab_size)}

    @staticmethod
    def make_batches(settings, task, tokenizers, max_length, pad_to_bucket):
        tokenizer = tokenizers["source"]
        return Batches(
            _dataset(settings, _texts(task, "train"), tokenizer, max_length, True),
            _dataset(settings, _texts(task, "validation"), tokenizer, max_length, False),
        )

    def build(self):
        vocab_size = self.tokenizers["source"].vocab_size
        return models.build_masked_language_model(vocab_size, config=self.plan.model)

    def config_extra(self) -> dict:
        return {
            "objective": OBJECTIVE,
            "source_vocab_size": self.tokenizers["source"].vocab_size,
            "num_train_texts": len(self.task.train),
            "num_validation_texts": len(self.task.validation),
        }

    def evaluate(self, model, fit) -> dict:
        settings, tokenizer = self.plan.settings, self.tokenizers["source"]
        validation = _texts(self.task, "validation")
        batches = _dataset(settings, validation, tokenizer, self.plan.max_length, False)
        scores = model.evaluate(batches, verbose=0, return_dict=True)
        return {
            "objective": OBJECTIVE,
            "validation_masked_loss": float(scores["loss"]),
            "validation_masked_accuracy": float(scores["masked_accuracy"]),
            "num_train_texts": len(self.task.train),
        }
