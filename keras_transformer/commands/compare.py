"""`keras-transformer compare`: measure Transformers against RNNs and CNNs, write a report."""


def register(sub) -> None:
    # fmt: off
    p = sub.add_parser("compare", description=__doc__.splitlines()[0], help="measure the "
                       "Transformer-versus-RNN complexity table and write a report")
    p.add_argument("--out", default="runs/comparison", help="output directory")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help="smaller sizes: a few minutes on a 2-core CPU")
    size.add_argument("--size", choices=("tiny", "quick", "full"), default=None,
                      help="tiny (seconds, for tests), quick (= --quick) or full (default, < 20 "
                      "min on 2 cores)")
    p.add_argument("--seed", type=int, default=0, help="seed of the long-range experiment")
    p.set_defaults(func=_compare)
    # fmt: on


def _compare(args) -> int:
    from keras_transformer.commands._benchmarks import load

    return load("comparison").main(args)
