"""`keras-transformer pretrain`: masked-LM pre-training of an encoder, then the fine-tuning test."""

from __future__ import annotations


def register(sub) -> None:
    from keras_transformer.training.pretraining import PretrainConfig

    defaults = PretrainConfig()
    p = sub.add_parser(
        "pretrain",
        help="pre-train an encoder as a masked language model (BERT's 15%% scheme)",
        description="Pre-train an encoder as a masked language model on unlabelled text "
        "(default: generated film reviews), then compare fine-tuning from it with training "
        "from scratch on a small labelled set.",
    )
    p.add_argument(
        "--corpus",
        default=defaults.corpus,
        help="'reviews' (generated offline) or a UTF-8 text file with one text per line",
    )
    p.add_argument(
        "--num-sentences", type=int, default=defaults.num_sentences, help="generated corpus size"
    )
    p.add_argument("--validation-fraction", type=float, default=defaults.validation_fraction)
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
    p.add_argument(
        "--mask-rate", type=float, default=defaults.mask_rate, help="share of tokens selected"
    )
    p.add_argument(
        "--finetune-task",
        choices=("auto", "reviews", "imdb", "none"),
        default="auto",
        help="after pre-training, fine-tune on this labelled task from the pre-trained encoder "
        "and from scratch and report both (auto: reviews for the reviews corpus, else none)",
    )
    p.add_argument("--finetune-epochs", type=int, default=defaults.finetune_epochs)
    p.add_argument("--finetune-batch-size", type=int, default=defaults.finetune_batch_size)
    p.add_argument("--finetune-learning-rate", type=float, default=defaults.finetune_learning_rate)
    p.add_argument("--out", default=None, help="run directory (default: runs/mlm_<corpus>)")
    p.add_argument("--seed", type=int, default=defaults.seed)
    p.add_argument("--overwrite", action="store_true", help="replace a finished run in --out")
    p.set_defaults(func=_pretrain)


def _pretrain(args) -> int:
    from keras_transformer.training.pretraining import PretrainConfig, pretrain

    options = {k: v for k, v in vars(args).items() if k not in ("command", "func")}
    if options["finetune_task"] == "none":
        options["finetune_task"] = None
    config = PretrainConfig(**options)
    metrics = pretrain(config)
    print(f"run directory: {config.run_dir}")
    for key in ("validation_masked_accuracy", "train_seconds", "parameters"):
        print(f"{key}: {metrics[key]}")
    tuned = metrics.get("fine_tuning")
    if tuned:
        print(
            f"fine-tuning on {tuned['task']} ({tuned['num_train']} labelled texts), test accuracy: "
            f"pre-trained {tuned['pretrained_test_accuracy']:.3f}, from scratch "
            f"{tuned['scratch_test_accuracy']:.3f} (chance {tuned['chance_accuracy']:.3f})"
        )
    return 0
