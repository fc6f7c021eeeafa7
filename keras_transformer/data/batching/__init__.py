"""Token ids in batches for `model.fit`, one module per kind of batch.

- `framing`: `[START] ids [END]` rows (`frame`, `encode_source`), shared by all.
- `translation`: encoder-decoder pairs, length-bucketed (`make_dataset`).
- `prefix`: decoder-only `[START] source [SEP] target [END]` sequences.
- `classification`: one label per text, or per token at "it".
- `contrastive`: aligned pairs with in-batch negatives (dual encoder).
- `masking`: BERT's masked-language-model corruption (pre-training).
"""
