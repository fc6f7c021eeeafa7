"""`Translator`: strings in, strings out, for a trained encoder-decoder."""

import json
import logging
import os
import pathlib
from collections.abc import Sequence

import keras
import tensorflow as tf

from keras_transformer._quiet import drop_per_instance_retracing
from keras_transformer._registration import missing_class_hint
from keras_transformer._validation import check_alpha, check_beam_size, check_max_length
from keras_transformer.choices import FEW_TEXTS, JIT_COMPILE
from keras_transformer.data import WordPieceTokenizer, encode_source
from keras_transformer.errors import OldWeightsLayoutError, UserInputError
from keras_transformer.inference.decoding import GREEDY, Decoding, load_decoding
from keras_transformer.inference.incremental import IncrementalDecoder, position_limit
from keras_transformer.inference.search import beam_search_ranked, greedy_search
from keras_transformer.runs import run_files

logger = logging.getLogger(__name__)

drop_per_instance_retracing()  # each translator traces its search once (_quiet.py)


def resolve_jit_compile(
    jit_compile: bool | str = "auto", use_cache: bool = True, texts: int | None = None
) -> bool:
    """Whether to compile the ids -> ids search with XLA: the one rule of `Translator`,
    `Translator.from_run_dir`, `keras-transformer translate --jit-compile` and the searches a
    `train` run evaluates with.

    "auto" turns XLA on for the cached search (3-4x faster than without it, even on a 2-core
    CPU) and, for the uncached one, only on a GPU: on a CPU its fixed-shape full-buffer steps
    are slower than the growing prefix that the plain search re-runs. Where the `texts` to
    translate are known and few (`choices.FEW_TEXTS`), "auto" is off: compiling costs more
    than it saves.

    Args:
        jit_compile: `True` or "on", `False` or "off", or "auto".
        use_cache: whether the search uses the key/value cache.
        texts: how many texts will be translated, where known ahead; None: a stream.

    Returns:
        `True` to compile with XLA.

    Example:
    >>> resolve_jit_compile("auto", use_cache=True), resolve_jit_compile("off")
    (True, False)
    >>> resolve_jit_compile("auto", texts=64), resolve_jit_compile("on", texts=64)
    (False, True)
    """
    if isinstance(jit_compile, bool):
        return jit_compile
    if jit_compile not in JIT_COMPILE:
        raise UserInputError(
            f"jit_compile must be True, False, 'auto', 'on' or 'off'; received "
            f"jit_compile={jit_compile!r}."
        )
    if jit_compile != "auto":
        return jit_compile != "off"
    if texts is not None and texts <= FEW_TEXTS:
        return False
    return use_cache or bool(tf.config.list_physical_devices("GPU"))


RANKED_ALPHAS = 8
"""Length penalties one compiled search ranks its beams by (`Translator.translate_ranked`):
fewer are padded, so that XLA compiles one search per batch size whatever their number."""


class Translator(tf.Module):
    """Translate a batch of strings with a trained model and its tokenizers.

    Tokenization, search and detokenization run in one `tf.function` (as exported for
    TF Serving); longer inputs are truncated with a warning; empty ones give `""`.

    Args:
        model: a `build_transformer` model.
        source_tokenizer, target_tokenizer: `WordPieceTokenizer`s of the run.
        max_length: tokens per sequence with `[START]` and `[END]` (the run's), in [3, positions].
        use_cache: decode with the key/value cache, or re-run the decoder per step.
        jit_compile: compile the ids -> ids search with XLA (string ops stay outside): `True`,
            `False`, or "auto" (the default, as `keras-transformer translate`): on for the
            cached search, for `use_cache=False` only on a GPU (`resolve_jit_compile`).

    Call arguments:
        texts: a list of strings.
        beam_size: 1 for greedy search, more for beam search; None (the default): the
            translator's `decoding`, which is greedy search, or for `from_run_dir` the search
            the run chose on its validation split (`decoding.json`, `inference.decoding`).
        alpha: beam search's length-penalty exponent; None: the `decoding`'s.
        max_length: decode with another `max_length` (same limits as above).

    Returns:
        A list of translations, one per input, in order.

    Example:
    >>> from keras_transformer.models import build_transformer
    >>> tok = WordPieceTokenizer.learn(["a b c", "c b a"], vocab_size=30)
    >>> model = build_transformer(tok.vocab_size, tok.vocab_size, num_layers=1,
    ...                           d_model=8, num_heads=2, dff=16, max_length=6)
    >>> translator = Translator(model, tok, tok, max_length=6)
    >>> outputs = translator(["a b", ""])
    >>> len(outputs), isinstance(outputs[0], str), outputs[1]
    (2, True, '')
    """

    def __init__(
        self,
        model: keras.Model,
        source_tokenizer: WordPieceTokenizer,
        target_tokenizer: WordPieceTokenizer,
        *,
        max_length: int = 64,
        use_cache: bool = True,
        jit_compile: bool | str = "auto",
    ):
        super().__init__(name="translator")
        check_max_length(max_length, hint=" Omit it to use the run's max_length.")
        self.model, self.use_cache = model, bool(use_cache)
        self.jit_compile = resolve_jit_compile(jit_compile, self.use_cache)  # a bool
        self.source_tokenizer, self.target_tokenizer = source_tokenizer, target_tokenizer
        self.max_length = int(max_length)
        self.decoder = self._make_decoder()  # checks max_length against the position table
        self.decoding = GREEDY  # the search a call without beam_size uses (from_run_dir: the run's)
        self._static_decoder, self._searches, self._resized = None, {}, {}  # made on demand

    @classmethod
    def from_run_dir(
        cls,
        run_dir: str | os.PathLike,
        *,
        use_cache: bool = True,
        max_length: int | None = None,
        jit_compile: bool | str = "auto",
    ) -> "Translator":
        """Loads a training run (`max_length=None`: the run's); decoder-only: `PrefixTranslator`.
        The defaults are those of `keras-transformer translate` (cache on, XLA "auto")."""
        jit_compile = resolve_jit_compile(jit_compile, use_cache)  # checked before loading
        architecture, files = run_files(run_dir)  # missing or damaged files named
        config_path = pathlib.Path(run_dir, "config.json")
        config = json.loads(config_path.read_text()) if config_path.is_file() else {}
        try:
            model = keras.models.load_model(files["model"], safe_mode=True, compile=False)
        except OldWeightsLayoutError as error:  # saved by an older version: say which, once
            raise OldWeightsLayoutError(f"{files['model']}: {error}") from None
        except Exception as error:  # corrupted or foreign file: say which and why
            if hint := missing_class_hint(error):
                raise UserInputError(f"could not load {files['model']}: {hint}") from error
            raise UserInputError(
                f"could not load {files['model']}: {type(error).__name__}: "
                f"{str(error).splitlines()[0] if str(error) else ''}. Re-run training "
                f"or restore the file."
            ) from error
        limit, options = position_limit(model), dict(use_cache=use_cache, jit_compile=jit_compile)
        if architecture == "decoder-only":
            if max_length is None:
                max_length = config.get("max_length") or (limit // 2 if limit else 64)
            tokenizer = WordPieceTokenizer.load(files["joint"])
            translator = PrefixTranslator(model, tokenizer, max_length=max_length, **options)
            translator.decoding = load_decoding(run_dir) or GREEDY
            return translator
        if max_length is None:
            max_length = config.get("max_length") or limit or 64
        source, target = (WordPieceTokenizer.load(files[side]) for side in ("source", "target"))
        translator = cls(model, source, target, max_length=max_length, **options)
        translator.decoding = load_decoding(run_dir) or GREEDY
        return translator

    def _make_decoder(self, static_shapes: bool = False, positions: int | None = None):
        options = dict(use_cache=self.use_cache, static_shapes=static_shapes)
        return IncrementalDecoder(self.model, positions or self.max_length, **options)

    def _encode(self, texts):  # strings (batch,) -> the search's ids (batch, width), 0-padded
        return encode_source(texts, self.source_tokenizer, self.max_length)

    def _output_ids(self, source, beam_size: int, alphas, decoder: IncrementalDecoder):
        """Framed source ids -> generated ids `(n * batch, max_length - 1)` to detokenize, for
        each of the `n` length penalties `alphas` (float32 `(n,)`; one search ranked `n` ways,
        greedy search's rows repeated); all 0 for a source with no tokens (`[START] [END]`
        only), which detokenizes to ""."""
        ids = dict(start_id=self.target_tokenizer.start_id, end_id=self.target_tokenizer.end_id)
        n = tf.size(alphas)
        if beam_size == 1:
            tokens = tf.tile(greedy_search(decoder, source, **ids), [n, 1])
        else:
            tokens = beam_search_ranked(decoder, source, beam_size=beam_size, alphas=alphas, **ids)
        blank = tf.reduce_sum(tf.cast(tf.not_equal(source, 0), tf.int32), axis=1) <= 2  # (batch,)
        return tf.where(tf.tile(blank, [n])[:, None], tf.zeros_like(tokens), tokens)

    def resolve_search(self, beam_size=None, alpha=None) -> Decoding:
        """The search a call runs: `beam_size` / `alpha` where given, else `self.decoding`
        (greedy, or the run's choice on its validation split: `inference.decoding`)."""
        beam_size = self.decoding.beam_size if beam_size is None else check_beam_size(beam_size)
        alpha = self.decoding.alpha if alpha is None else check_alpha(alpha)
        return Decoding(beam_size, alpha)

    def search_function(self, beam_size=None, alpha=None, jit_compile=None):
        """The search: strings `(batch,)` -> translations `(batch,)`; `jit_compile=None` uses the
        translator's setting (the export passes False, as TF Serving runs without XLA).
        `beam_size` / `alpha` None: `self.decoding`'s."""
        beam_size, alpha = self.resolve_search(beam_size, alpha)
        search, alphas = self._ranked_search(beam_size, jit_compile), tf.constant([alpha])
        return lambda texts: search(texts, alphas)

    def _ranked_search(self, beam_size: int, jit_compile=None):
        """strings `(batch,)`, float32 alphas `(n,)` -> translations `(n * batch,)`, alpha-major.

        One `tf.function` per beam size and XLA setting, traced once, takes the length
        penalties as an input: the alphas `train` compares after training
        (`inference.decoding`), ranked over one search, and a `translate --alpha` share one
        trace."""
        jit = self.jit_compile if jit_compile is None else bool(jit_compile)
        key = (beam_size, jit)
        if key not in self._searches:
            if jit and self._static_decoder is None:  # the fixed-shape decoder XLA compiles
                self._static_decoder = self._make_decoder(static_shapes=True)
            decoder = self._static_decoder if jit else self.decoder

            def search_ids(source, penalties):
                return self._output_ids(source, key[0], penalties, decoder)

            # autograph=False: the search's loops are tf.while_loops already, and converting
            # its Python source cost about half of the first translation (3.9 of 8 s, measured
            # by benchmarks/translate_startup.py's profile on this 2-core CPU).
            if jit:
                spec = [tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None], tf.float32)]
                search_ids = tf.function(
                    search_ids, input_signature=spec, jit_compile=True, autograph=False
                )

            texts_and_alphas = [tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.float32)]

            @tf.function(input_signature=texts_and_alphas, autograph=False)
            def translate(texts, penalties):
                source = self._encode(texts)
                rows = tf.size(penalties) * tf.shape(source)[0]
                if jit:  # one source width and RANKED_ALPHAS alphas: XLA compiles once per
                    # batch size, not per width or number of alphas
                    source = tf.pad(source, [[0, 0], [0, self.max_length - tf.shape(source)[1]]])
                    penalties = tf.pad(penalties, [[0, RANKED_ALPHAS - tf.size(penalties)]])
                return self.target_tokenizer.detokenize(search_ids(source, penalties)[:rows])

            self._searches[key] = translate
        return self._searches[key]

    def translate_tokens(self, texts: Sequence[str], beam_size=None, alpha=None):
        """Generated target ids `(batch, max_length - 1)` (END included, 0 after), eagerly."""
        beam_size, alpha = self.resolve_search(beam_size, alpha)
        source = self._encode(tf.constant(list(texts), tf.string))
        return self._output_ids(source, beam_size, tf.constant([alpha]), self.decoder).numpy()

    def __call__(
        self, texts: Sequence[str], beam_size=None, alpha=None, max_length=None
    ) -> list[str]:
        if isinstance(texts, str):
            raise TypeError(
                "texts must be a list of strings; received one string. Wrap it: translator([text])."
            )
        beam_size, alpha = self.resolve_search(beam_size, alpha)
        if max_length is not None and max_length != self.max_length:
            if max_length not in self._resized:
                self._resized[max_length] = self._resized_copy(max_length)
            return self._resized[max_length](texts, beam_size=beam_size, alpha=alpha)
        return self.translate_ranked(texts, beam_size, [alpha])[0]

    def translate_ranked(self, texts: Sequence[str], beam_size: int, alphas) -> list[list[str]]:
        """One search of `texts`, its finished beams ranked by each length penalty in `alphas`:
        one list of translations per alpha, each what `self(texts, beam_size, alpha)` returns,
        for the cost of one search (alpha only ranks the finished beams).

        >>> from keras_transformer.models import build_transformer
        >>> tok = WordPieceTokenizer.learn(["a b c", "c b a"], vocab_size=30)
        >>> model = build_transformer(tok.vocab_size, tok.vocab_size, num_layers=1,
        ...                           d_model=8, num_heads=2, dff=16, max_length=6)
        >>> translator = Translator(model, tok, tok, max_length=6)
        >>> short, long = translator.translate_ranked(["a b"], 3, [0.0, 2.0])
        >>> short == translator(["a b"], beam_size=3, alpha=0.0)
        True
        """
        if isinstance(texts, str):
            raise TypeError(
                "texts must be a list of strings; received one string. Wrap it: [text]."
            )
        beam_size, alphas = check_beam_size(beam_size), [check_alpha(a) for a in alphas]
        if not alphas:
            raise UserInputError(
                "alphas is empty: the length penalty alpha must be a number >= 0, one or more of "
                "them; pass e.g. [0.6]."
            )
        if len(alphas) > RANKED_ALPHAS:  # one search per group of RANKED_ALPHAS
            groups = range(0, len(alphas), RANKED_ALPHAS)
            return [
                row
                for i in groups
                for row in self.translate_ranked(texts, beam_size, alphas[i : i + RANKED_ALPHAS])
            ]
        texts = list(texts)
        if not texts:
            return [[] for _ in alphas]
        self._warn_if_truncated(texts)
        rows = len(texts)
        if self.jit_compile:
            # XLA compiles once per batch size: round up to a power of two (repeating the
            # last text) so a stream of batches of varying sizes compiles a few times only.
            texts = texts + texts[-1:] * (2 ** (rows - 1).bit_length() - rows)
        search = self._ranked_search(beam_size)
        outputs = search(tf.constant(texts, tf.string), tf.constant(alphas, tf.float32)).numpy()
        width = len(texts)
        return [
            [t.decode("utf-8") for t in outputs[i * width : i * width + rows]]
            for i in range(len(alphas))
        ]

    def _resized_copy(self, max_length: int) -> "Translator":
        return Translator(
            self.model,
            self.source_tokenizer,
            self.target_tokenizer,
            max_length=max_length,
            use_cache=self.use_cache,
            jit_compile=self.jit_compile,
        )

    def _warn_if_truncated(self, texts: list[str]) -> None:
        lengths = self.source_tokenizer.tokenize(tf.constant(texts)).row_lengths().numpy()
        if too_long := [i for i, n in enumerate(lengths) if n + 2 > self.max_length]:
            logger.warning(
                "%d input(s) longer than max_length=%d tokens were truncated (first index %d).",
                len(too_long),
                self.max_length,
                too_long[0],
            )


class _PrefixDecoder:
    """A decoder-only `IncrementalDecoder` as an encoder-decoder one whose "source" is the
    prompt: `step` forces it (logit 0 for its token, -1e9 for others: copied at no cost)."""

    def __init__(self, decoder: IncrementalDecoder):
        self.decoder, self.max_length = decoder, decoder.max_length

    def encode(self, prompt):
        prompt = tf.convert_to_tensor(prompt, tf.int32)
        return prompt, tf.not_equal(prompt, 0)

    def initial_state(self, context, source_mask):
        state = self.decoder.initial_state(batch_size=tf.shape(context)[0])
        lengths = tf.reduce_sum(tf.cast(source_mask, tf.int32), axis=1)
        return dict(state, prompt=context, prompt_lengths=lengths)

    def step(self, tokens, index, state):
        logits, state = self.decoder.step(tokens, index, state)
        prompt = state["prompt"]
        following = tf.gather(prompt, tf.minimum(index + 1, tf.shape(prompt)[1] - 1), axis=1)
        forced = tf.one_hot(following, tf.shape(logits)[-1], on_value=0.0, off_value=-1e9)
        in_prompt = index + 1 < state["prompt_lengths"]  # (batch,)
        return tf.where(in_prompt[:, None], forced, logits), state

    reorder = staticmethod(IncrementalDecoder.reorder)


class PrefixTranslator(Translator):
    """`Translator` of a decoder-only run: the continuation of `[START] source [SEP]`.

    The model (trained on "source [SEP] target") continues the prompt up to `[END]`, at most
    `max_length - 1` tokens (beam search's length penalty counts the prompt's positions too).

    Args:
        model: a `build_language_model` model with `2 * max_length - 1` positions.
        tokenizer: the run's joint `WordPieceTokenizer`.
        max_length: tokens per framed side (the training `max_length`).
        use_cache, jit_compile: as for `Translator`.
    """

    def __init__(
        self,
        model: keras.Model,
        tokenizer: WordPieceTokenizer,
        *,
        max_length: int = 64,
        use_cache: bool = True,
        jit_compile: bool | str = "auto",
    ):
        options = dict(max_length=max_length, use_cache=use_cache, jit_compile=jit_compile)
        super().__init__(model, tokenizer, tokenizer, **options)

    def _make_decoder(self, static_shapes: bool = False) -> _PrefixDecoder:
        limit, positions = position_limit(self.model), 2 * self.max_length - 1
        if limit is not None and positions > limit:
            raise UserInputError(
                f"max_length={self.max_length} needs {positions} positions (prompt "
                f"and continuation) but the model's position table has {limit}; pass "
                f"max_length <= {(limit + 1) // 2}."
            )
        return _PrefixDecoder(super()._make_decoder(static_shapes, positions))

    def _encode(self, texts):
        tok = self.source_tokenizer
        ids = tf.cast(tok.tokenize(texts)[:, : self.max_length - 2], tf.int32)
        column = tf.ones([ids.nrows(), 1], tf.int32)  # [START] source [SEP], 0-padded
        return tf.concat([column * tok.start_id, ids, column * tok.sep_id], 1).to_tensor(0)

    def _output_ids(self, prompts, beam_size: int, alphas, decoder):
        generated = super()._output_ids(prompts, beam_size, alphas, decoder)  # without [START]
        lengths = tf.reduce_sum(tf.cast(tf.not_equal(prompts, 0), tf.int32), axis=1)
        lengths = tf.tile(lengths, [tf.size(alphas)])  # a row per alpha and prompt
        # the continuation (rows, max_length - 1) of row i starts at lengths[i] - 1
        positions = lengths[:, None] - 1 + tf.range(self.max_length - 1)[None]
        return tf.gather(generated, positions, batch_dims=1)

    def _resized_copy(self, max_length: int) -> "PrefixTranslator":
        return PrefixTranslator(
            self.model,
            self.source_tokenizer,
            max_length=max_length,
            use_cache=self.use_cache,
            jit_compile=self.jit_compile,
        )
