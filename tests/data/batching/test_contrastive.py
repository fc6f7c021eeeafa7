"""Contrastive batches: row i of "left" matches row i of "right", the label of row i is i."""

from keras_transformer.data.batching.contrastive import pair_dataset
from keras_transformer.data.text.tokenizer import WordPieceTokenizer


def test_rows_stay_aligned_and_only_full_batches_are_kept():
    pairs = [(f"l{i}", f"r{i}") for i in range(7)]
    tokenizer = WordPieceTokenizer.learn([text for pair in pairs for text in pair], 60)
    batches = list(pair_dataset(pairs, tokenizer, batch_size=3, max_length=8, seed=1))
    assert len(batches) == 2  # 7 pairs: the seventh cannot fill a batch
    for inputs, labels in batches:
        assert labels.numpy().tolist() == [0, 1, 2]
        left = tokenizer.detokenize(inputs["left"]).numpy()
        right = tokenizer.detokenize(inputs["right"]).numpy()
        assert [r.decode() for r in right] == [s.decode().replace("l", "r") for s in left]
