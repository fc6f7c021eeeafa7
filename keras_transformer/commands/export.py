"""`keras-transformer export RUN_DIR --out DIR`: a SavedModel for TF Serving."""

from keras_transformer.commands._arguments import add_search_options


def register(sub) -> None:
    p = sub.add_parser(
        "export",
        help="export a trained run as a TF Serving SavedModel (strings in, strings out)",
        description="Write DIR/<version>/ with a serving_default signature text -> translation, "
        "from a finished run of an encoder-decoder or decoder-only translator.",
    )
    p.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        help="the --out directory of a finished `keras-transformer train` run",
    )
    p.add_argument("--out", required=True, help="model base directory (versions go inside)")
    p.add_argument(
        "--model-version",
        type=int,
        default=None,
        metavar="N",
        help="the SavedModel version, DIR/N/ (default: the next free version)",
    )
    add_search_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from keras_transformer.export import export_translator
    from keras_transformer.inference.translator import Translator, check_beam_size

    check_beam_size(args.beam_size)  # before loading the model
    translator = Translator.from_run_dir(args.run_dir)
    options = dict(beam_size=args.beam_size, alpha=args.alpha)
    print(export_translator(translator, args.out, args.model_version, **options))
    return 0
