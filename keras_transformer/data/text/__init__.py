"""Text before the model: `normalize` (one Unicode form, one kind of space) and
`tokenizer` (`WordPieceTokenizer`, in-graph, case and accents kept)."""
