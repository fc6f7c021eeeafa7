"""`keras-transformer train`: train an encoder-decoder and write a run directory."""

from __future__ import annotations


def register(sub) -> None:
    from keras_transformer.training.distribute import STRATEGIES
    from keras_transformer.training.run import TrainConfig

    defaults = TrainConfig()
    p = sub.add_parser(
        "train",
        help="train an encoder-decoder Transformer and write a run directory",
        description="Train a translator (default: numbers en -> de, embedded, offline).",
    )
    p.add_argument(
        "--task",
        default=defaults.task,
        help="numbers, copy, reverse, sort, recall, tsv, ted_hrlr_pt_en, it-referent, imdb, "
        "reviews",
    )
    p.add_argument(
        "--architecture",
        choices=("encoder-decoder", "encoder", "decoder-only", "dual-encoder"),
        default=defaults.architecture,
        help="encoder-decoder (translation, the default); encoder (classification: "
        "it-referent, imdb, reviews); decoder-only (translation read as 'source [SEP] target', or the "
        "causal it-referent baseline); dual-encoder (sentence vectors from pairs, trained "
        "with in-batch negatives; reports retrieval accuracy@1 on the test pairs)",
    )
    p.add_argument("--source-lang", default=defaults.source_lang)
    p.add_argument("--target-lang", default=defaults.target_lang)
    p.add_argument("--data", default=None, help="tab-separated parallel file for --task tsv")
    p.add_argument(
        "--skip-malformed",
        action="store_true",
        help="--task tsv: leave out malformed lines (counted in a warning) instead of failing",
    )
    p.add_argument("--num-train", type=int, default=None, help="training pairs (task default)")
    p.add_argument("--num-validation", type=int, default=None, help="validation pairs")
    p.add_argument("--num-test", type=int, default=None, help="test pairs")
    p.add_argument("--epochs", type=int, default=defaults.epochs)
    p.add_argument("--batch-size", type=int, default=defaults.batch_size)
    p.add_argument("--max-length", type=int, default=defaults.max_length)
    p.add_argument("--num-layers", type=int, default=defaults.num_layers)
    p.add_argument("--d-model", type=int, default=defaults.d_model)
    p.add_argument("--num-heads", type=int, default=defaults.num_heads)
    p.add_argument("--dff", type=int, default=defaults.dff)
    p.add_argument("--dropout", type=float, default=defaults.dropout)
    p.add_argument("--vocab-size", type=int, default=defaults.vocab_size)
    p.add_argument("--warmup-steps", type=int, default=defaults.warmup_steps)
    p.add_argument("--label-smoothing", type=float, default=defaults.label_smoothing)
    p.add_argument(
        "--learning-rate",
        type=float,
        default=None,
        help="constant Adam learning rate (default: the paper's warm-up schedule)",
    )
    p.add_argument(
        "--init-from",
        default=None,
        metavar="RUN_DIR",
        help="fine-tune the encoder of a keras-transformer pretrain run (--architecture "
        "encoder, --task reviews or imdb); its tokenizer and sizes are used",
    )
    p.add_argument(
        "--freeze-embeddings",
        action="store_true",
        help="keep the token embeddings fixed (classification runs): with a small labelled "
        "set, words seen only in pre-training keep their place beside the seen ones",
    )
    p.add_argument("--out", default=None, help="run directory (default: runs/<task>_<src>_<tgt>)")
    p.add_argument("--seed", type=int, default=defaults.seed)
    p.add_argument("--jit-compile", choices=("auto", "on", "off"), default=defaults.jit_compile)
    p.add_argument(
        "--mixed-precision",
        choices=("auto", "bf16", "fp16", "none"),
        default=defaults.mixed_precision,
        help="auto (default): bf16 on GPUs of compute capability >= 8.0, fp16 on >= 7.0, "
        "float32 on CPU (where mixed precision measured slower); logits stay float32",
    )
    p.add_argument("--overwrite", action="store_true", help="replace a finished run in --out")
    p.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default=defaults.strategy,
        help="tf.distribute strategy: none (one device), mirrored (all local GPUs, or "
        "--cpu-devices N logical CPUs), multiworker (hosts listed in the TF_CONFIG "
        "environment variable), tpu (TPUStrategy; TPU_NAME or a Cloud TPU VM). "
        "--batch-size is the global batch, split across the replicas. See docs/scaling.md",
    )
    p.add_argument(
        "--cpu-devices",
        type=int,
        default=None,
        metavar="N",
        help="with --strategy mirrored: split the CPU into N logical devices (testing "
        "the multi-replica path without GPUs)",
    )
    p.set_defaults(func=_train)


def _train(args) -> int:
    from keras_transformer.training.run import TrainConfig, train

    options = {k: v for k, v in vars(args).items() if k not in ("command", "func")}
    if options["mixed_precision"] == "none":
        options["mixed_precision"] = None
    config = TrainConfig(**options)
    metrics = train(config)
    print(f"run directory: {config.run_dir}")
    if "test_retrieval_accuracy_at_1" in metrics:  # a dual-encoder run
        for key in (
            "test_retrieval_accuracy_at_1",
            "test_reverse_retrieval_accuracy_at_1",
            "chance_accuracy",
            "train_seconds",
            "parameters",
        ):
            print(f"{key}: {metrics[key]}")
        for sample in metrics["samples"]:
            print(
                f"  {sample['query']}  ->  {sample['retrieved']}   (reference: {sample['reference']})"
            )
        return 0
    if "test_accuracy" in metrics:  # a classification run (it-referent, imdb, reviews)
        for key in ("test_accuracy", "chance_accuracy", "train_seconds", "parameters"):
            print(f"{key}: {metrics[key]}")
        for sample in metrics["samples"]:
            print(f"  {sample['sentence']}  'it' -> {sample['prediction']}")  # it-referent
        return 0
    for key in (
        "test_exact_match",
        "test_token_accuracy",
        "test_bleu",
        "test_chrf",
        "train_seconds",
        "train_tokens_per_second",
        "parameters",
    ):
        print(f"{key}: {metrics[key]}")
    print("sample test translations:")
    for sample in metrics["samples"]:
        print(
            f"  {sample['source']}  ->  {sample['prediction']}   (reference: {sample['reference']})"
        )
    return 0
