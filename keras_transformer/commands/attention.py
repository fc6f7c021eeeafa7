"""`keras-transformer attention RUN_DIR TEXT --out FILE.html`: an attention explorer page."""


def register(sub) -> None:
    p = sub.add_parser(
        "attention",
        help="translate TEXT and write a page to explore the model's attention",
        description="Translate TEXT with the run's model and write one self-contained HTML page "
        "(no network) on which you pick the kind of attention (encoder self, decoder self, "
        "cross), the layer and the head, and see the weights between the tokens. An encoder run "
        "(train --architecture encoder, or pretrain) gives its encoder self-attention.",
    )
    p.add_argument("run_dir", help="directory written by `keras-transformer train` or `pretrain`")
    p.add_argument("text", help="the sentence to translate (or, for an encoder, to encode)")
    p.add_argument("--out", required=True, help="the HTML file to write, e.g. attention.html")
    p.set_defaults(func=run)


def run(args) -> int:
    from keras_transformer.visualization.attention_page import write_attention_page

    print(write_attention_page(args.run_dir, args.text, args.out))
    return 0
