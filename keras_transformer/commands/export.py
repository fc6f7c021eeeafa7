"""`keras-transformer export RUN_DIR --out DIR`: a SavedModel for TF Serving."""

import logging
import time

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


logger = logging.getLogger("keras_transformer.commands.export")


def run(args) -> int:
    from keras_transformer._validation import check_beam_size
    from keras_transformer.commands.translate import describe
    from keras_transformer.export import export_translator
    from keras_transformer.inference.translator import Translator

    if args.beam_size is not None:
        check_beam_size(args.beam_size)  # before loading the model
    started = time.perf_counter()
    translator = Translator.from_run_dir(args.run_dir)
    if logger.isEnabledFor(logging.INFO):  # -v: what runs (describe() asks TensorFlow)
        loaded = _since(started)
        logger.info("export: %s; loaded in %.1f s", describe(translator, args.run_dir), loaded)
    search = translator.resolve_search(args.beam_size, args.alpha).describe()
    logger.info(
        "export: tracing the serving graph (%s, key/value cache, no XLA: TF Serving runs "
        "without it) and writing the SavedModel under %s",
        search,
        args.out,
    )
    started = time.perf_counter()
    options = dict(beam_size=args.beam_size, alpha=args.alpha)
    path = export_translator(translator, args.out, args.model_version, **options)
    logger.info("export: written in %.1f s", _since(started))
    print(path)
    print(client_note())
    return 0


def client_note() -> str:
    """The last line of `export`: what loads the SavedModel, and where the serving guide is
    (a file of the installed package, `guides.guide_pointer`)."""
    import tensorflow as tf

    from keras_transformer.guides import guide_pointer

    release = ".".join(tf.__version__.split(".")[:2])
    return (
        f"to serve it: TF Serving {release} (docker image tensorflow/serving:{release}.0, "
        "whose ops include the tensorflow-text ones it uses); from Python: `import "
        "tensorflow_text` before tf.saved_model.load (it registers NormalizeUTF8 and "
        f"WordpieceTokenizeWithOffsets). The serving guide: {guide_pointer('serving')}"
    )


def _since(started: float) -> float:
    return time.perf_counter() - started
