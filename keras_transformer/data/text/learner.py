"""tensorflow-text's WordPiece learning pass (`learn_with_thresh`), with the work that does not
depend on the threshold done once for all the thresholds a search tries.

The learner refines a vocabulary in `num_iterations` passes over the words. Its first pass
counts every substring of every word, then walks them from the longest down, taking off each
piece's count from its prefixes; it keeps the pieces whose count is still `thresh` or more.
Neither the counts nor the taking-off depend on `thresh`: only the final filter does. So
`ThresholdLearner` counts and takes off once, and each threshold filters that list; the later
passes (which start from the pieces a threshold kept) run as tensorflow-text's do, with the same
code. The vocabularies are the same, piece for piece (`tests/data/text/test_learner.py`
compares them with tensorflow-text's); the first pass, the dearest one, is no longer repeated
for every threshold the search tries.
"""

from __future__ import annotations

import math

from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

__all__ = ["FIRST_PASS_SHRINK", "ThresholdLearner"]

FIRST_PASS_SHRINK = 0.43
"""The learner's later passes keep about this share of the pieces its first pass keeps at the
same threshold, near a vocabulary of a few thousand pieces (0.43-0.45 on both sides of the
95k-pair Anki English-Spanish file). `ThresholdLearner.guess` starts the threshold search
there."""


class ThresholdLearner:
    """`learner.learn_with_thresh(word_counts, thresh, params)` for many `thresh`, faster.

    Args:
        word_counts: list of `(word, count)`, as `learn_with_thresh` takes them (filtered).
        params: tensorflow-text's `learner.Params`.

    Example:
    >>> params = learner.Params(
    ...     upper_thresh=100, lower_thresh=1, num_iterations=4, max_input_tokens=-1,
    ...     max_token_length=16, max_unique_chars=100, vocab_size=30, slack_ratio=0.05,
    ...     include_joiner_token=True, joiner="##", reserved_tokens=["[PAD]"])
    >>> counts = [("lower", 5), ("lowest", 3), ("newer", 4), ("wider", 2)]
    >>> learn = ThresholdLearner(counts, params)
    >>> all(learn(t) == learner.learn_with_thresh(counts, t, params) for t in (1, 2, 3, 5, 9))
    True
    """

    def __init__(self, word_counts: list[tuple[str, int]], params) -> None:
        self.word_counts, self.params = word_counts, params
        self.char_tokens = learner.extract_char_tokens(word_counts)
        self._first = self._taken_off(self._count(None))  # the first pass, for every thresh
        self._sorted_counts = sorted((count for _, count in self._first), reverse=True)

    def first_size(self, thresh: int) -> int:
        """Pieces the first pass keeps at `thresh`, characters included."""
        return len(self._kept(self._first, thresh))

    def guess(self, size: float, learnt: dict[int, int] | None = None) -> int:
        """A threshold to try for about `size` pieces: where the first pass keeps
        `size / shrink` pieces, `shrink` measured at the learnt threshold (`{thresh: size}`)
        whose size was nearest `size`, else `FIRST_PASS_SHRINK`; 1 where it keeps fewer."""
        shrink = FIRST_PASS_SHRINK
        if learnt:
            thresh, found = min(learnt.items(), key=lambda item: abs(math.log(item[1] / size)))
            shrink = found / self.first_size(thresh)
        counts = self._sorted_counts
        wanted = int(size / shrink) - 2 * len(self.char_tokens)
        if wanted < 1 or wanted > len(counts):
            return 1
        return max(1, counts[wanted - 1])

    def __call__(self, thresh: int) -> list[str]:
        params = self.params
        kept = self._kept(self._first, thresh)
        for _ in range(1, params.num_iterations):
            kept = self._kept(self._taken_off(self._count(kept)), thresh)
        return learner.generate_final_vocabulary(params.reserved_tokens, self.char_tokens, kept)

    def _kept(self, counted: list[tuple[str, int]], thresh: int) -> dict[str, int]:
        """The pieces counted `thresh` times or more, and every character (as the learner
        keeps them: a later entry of the same piece overwrites an earlier one)."""
        kept = {}
        for token, count in counted:
            if count >= thresh:
                kept[token] = count
        params = self.params
        return learner.ensure_all_tokens_exist(
            self.char_tokens, kept, params.include_joiner_token, params.joiner
        )

    def _count(self, current: dict[str, int] | None) -> list[dict[str, int]]:
        """Counts of the substrings starting where the `current` pieces split each word (every
        position on the first pass, `current` None), by length; tensorflow-text's loop."""
        params = self.params
        joiner, with_joiner = params.joiner, params.include_joiner_token
        subtokens = [{} for _ in range(params.max_token_length + 1)]
        for word, count in self.word_counts:
            if current is None:
                split_indices = range(1, len(word) + 1)
            else:
                split_indices = learner.get_split_indices(word, current, with_joiner, joiner)
                if not split_indices:
                    continue
            start = 0
            for index in split_indices:
                for end in range(start + 1, len(word) + 1):
                    subtoken = word[start:end]
                    length = len(subtoken)
                    if with_joiner and start > 0:
                        subtoken = joiner + subtoken
                    counts = subtokens[length]
                    counts[subtoken] = counts.get(subtoken, 0) + count
                start = index
        return subtokens

    def _taken_off(self, subtokens: list[dict[str, int]]) -> list[tuple[str, int]]:
        """Every substring with its count once the longer pieces it begins took theirs off,
        longest first: what the learner compares with the threshold, in its order."""
        params = self.params
        joiner_len = len(params.joiner)
        counted = []
        for length in range(params.max_token_length, 0, -1):
            for token, count in subtokens[length].items():
                counted.append((token, count))
                if len(token) > length:  # this token includes the joiner
                    for i in range(1 + joiner_len, length + joiner_len):
                        prefixes = subtokens[i - joiner_len]
                        prefix = token[0:i]
                        if prefix in prefixes:
                            prefixes[prefix] -= count
                else:
                    for i in range(1, length):
                        prefix = token[0:i]
                        if prefix in subtokens[i]:
                            subtokens[i][prefix] -= count
        return counted
