"""Learning a WordPiece vocabulary: tensorflow-text's threshold search against the package's.

`WordPieceTokenizer.learn` runs tensorflow-text's learner at one count threshold per pass and
searches for the threshold whose vocabulary is 0-5 % below the size asked. tensorflow-text's own
`learn` halves the count range each pass; the package (`tokenizer._learn_pieces`) guesses on a
log-log line, and counts the learner's first iteration once for every threshold it tries
(`learner.ThresholdLearner`). This script learns each side of a corpus each way, alternating,
in one process, and prints the passes, thresholds, sizes and seconds of each:

- `tensorflow-text`: its `learn`;
- `package`: `_learn_pieces`;
- `package-per-pass`: `_learn_pieces` with every pass run by tensorflow-text's
  `learn_with_thresh` (the search alone, before `ThresholdLearner`).

    python benchmarks/vocab_learning.py --data /tmp/corpora/anki-en-es/pairs.tsv --vocab-size 3500
    python benchmarks/vocab_learning.py --data pairs.tsv --ways package-per-pass package
"""

from __future__ import annotations

import argparse
import os
import time


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="source<TAB>target lines")
    parser.add_argument("--vocab-size", type=int, default=3500)
    parser.add_argument("--pairs", type=int, default=0, help="first N lines only (0: all)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--ways",
        nargs="+",
        default=["tensorflow-text", "package"],
        choices=["tensorflow-text", "package", "package-per-pass"],
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    from keras_transformer.data.text import tokenizer as module

    with open(args.data, encoding="utf-8") as handle:
        rows = [line.rstrip("\n").split("\t") for line in handle]
    rows = rows[: args.pairs] if args.pairs else rows
    passes = []
    learn_with_thresh = learner.learn_with_thresh

    def counted(words, thresh, params):
        passes.append(thresh)
        return learn_with_thresh(words, thresh, params)

    learner.learn_with_thresh = counted
    fast = module.ThresholdLearner

    class CountedLearner(fast):
        def __call__(self, thresh):
            passes.append(thresh)
            return super().__call__(thresh)

    class PerPassLearner(CountedLearner):  # the same search, each pass tensorflow-text's
        def __call__(self, thresh):
            return counted(self.word_counts, thresh, self.params)

    for side, name in ((0, "source"), (1, "target")):
        counts = list(module.count_words(row[side] for row in rows).items())
        chars = {c for word, _ in counts for c in word}
        options = dict(lower_thresh=10, num_iterations=4, max_token_length=32)
        for _ in range(args.repeats):
            for way in args.ways:
                passes.clear()
                module.ThresholdLearner = (
                    PerPassLearner if way == "package-per-pass" else CountedLearner
                )
                start = time.perf_counter()
                if way != "tensorflow-text":
                    vocab = module._learn_pieces(
                        counts, args.vocab_size, max_unique_chars=len(chars), **options
                    )
                else:
                    vocab = learner.learn(
                        counts,
                        args.vocab_size,
                        list(module.RESERVED_TOKENS),
                        max_unique_chars=len(chars),
                        include_joiner_token=True,
                        joiner="##",
                        **options,
                    )
                seconds = time.perf_counter() - start
                print(
                    f"{name} ({len(counts)} words): {way:15s} {len(passes):2d} passes, "
                    f"{seconds:5.1f} s, {len(vocab)} pieces, thresholds {passes}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
