"""Length penalties of beam search: one search of a finished run, ranked by many alphas.

`train` chooses the run's search on the first 500 validation pairs (`inference.decoding`):
greedy, or 4 beams ranked at alpha 0.6, 1.0 or 1.4. Alpha only ranks the finished beams, so
`Translator.translate_ranked` scores any number of alphas for the cost of one search. This
script does that on the validation pairs the choice sees and on the next ones (which it does
not), and prints corpus BLEU (sacrebleu, references normalised as the choice does) and the
output / reference length ratio for each alpha, so a finer grid can be judged on pairs it was
not chosen on.

    python benchmarks/length_penalties.py --run runs/anki-en-fr --data /tmp/corpora/anki-en-fr/pairs.tsv
    python benchmarks/length_penalties.py --run RUN --data pairs.tsv --alphas 0.6 1.0 1.4 2.0
"""

from __future__ import annotations

import argparse

ALPHAS = (0.6, 0.8, 1.0, 1.2, 1.4, 1.7, 2.0, 2.5, 3.0)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a finished translation run directory")
    parser.add_argument("--data", required=True, help="the --data file the run trained on")
    parser.add_argument("--seed", type=int, default=0, help="the run's --seed (its split)")
    parser.add_argument("--alphas", type=float, nargs="+", default=list(ALPHAS))
    parser.add_argument("--beam-size", type=int, default=4)
    parser.add_argument(
        "--pairs", type=int, default=500, help="validation pairs a block (the choice's 500)"
    )
    args = parser.parse_args(argv)

    import sacrebleu

    from keras_transformer.data.tasks.tsv import tsv_task
    from keras_transformer.data.text.normalize import normalize_text
    from keras_transformer.inference import Translator
    from keras_transformer.training.evaluation import translate_ranked_in_chunks

    validation = tsv_task(path=args.data, seed=args.seed).validation  # train --task tsv's split
    translator = Translator.from_run_dir(args.run)
    blocks = {
        f"first {args.pairs} (the choice's)": validation[: args.pairs],
        f"next {args.pairs}": validation[args.pairs : 2 * args.pairs],
    }
    header = ["pairs", "greedy", *(f"{a:g}" for a in args.alphas)]
    print("| " + " | ".join(header) + " |")
    print("|---" * len(header) + "|")
    for name, pairs in blocks.items():
        if not pairs:
            continue
        sources = [source for source, _ in pairs]
        references = [[normalize_text(target) for _, target in pairs]]
        greedy = translate_ranked_in_chunks(translator, sources, 1, [0.6])[0]
        ranked = translate_ranked_in_chunks(translator, sources, args.beam_size, args.alphas)
        cells = [f"{sacrebleu.corpus_bleu(greedy, references).score:.1f}"]
        for outputs in ranked:
            bleu = sacrebleu.corpus_bleu(outputs, references)
            cells.append(f"{bleu.score:.1f} ({bleu.sys_len / bleu.ref_len:.2f})")
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
