"""Translator, greedy and beam search, with and without the key/value cache."""

import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.choices import FEW_TEXTS
from keras_transformer.data import encode_source
from keras_transformer.inference import (
    IncrementalDecoder,
    Translator,
    beam_search,
    beam_search_ranked,
    greedy_decode,
    greedy_search,
    resolve_jit_compile,
)
from keras_transformer.inference.translator import RANKED_ALPHAS
from keras_transformer.models import build_transformer
from tests.helpers import TINY_MAX_LENGTH as MAX_LENGTH
from tests.helpers import TINY_SOURCES as SOURCES
from tests.helpers import retracing_warnings

TEXTS = [*SOURCES, "", "one " * 40, "ünknöwn çharacters", "  \t "]
BLANK = [i for i, text in enumerate(TEXTS) if not text.strip()]


@pytest.fixture(scope="module")
def translators(varied_run):  # without XLA: one compile per batch size would slow these tests
    return (
        Translator.from_run_dir(varied_run, jit_compile=False),
        Translator.from_run_dir(varied_run, use_cache=False, jit_compile=False),
    )


def test_the_varied_model_gives_input_dependent_translations(translators):
    cached, _ = translators
    outputs = cached(TEXTS)
    assert len({o for i, o in enumerate(outputs) if i not in BLANK}) >= 3


def test_cached_uncached_and_plain_loop_give_identical_tokens(translators):
    cached, uncached = translators
    a = cached.translate_tokens(TEXTS)
    b = uncached.translate_tokens(TEXTS)
    np.testing.assert_array_equal(a, b)
    source = np.asarray(encode_source(TEXTS, cached.source_tokenizer, MAX_LENGTH))
    plain = greedy_decode(cached.model, source, start_id=2, end_id=3, max_length=MAX_LENGTH - 1)
    plain[BLANK] = 0  # the Translator's rule: no source tokens, no output
    np.testing.assert_array_equal(a, plain)
    assert cached(TEXTS) == uncached(TEXTS)


def test_uncached_full_buffer_equals_prefix(translators):
    """The uncached step over the whole buffer (what XLA needs) equals the prefix step."""
    cached, _ = translators
    source = encode_source(TEXTS, cached.source_tokenizer, MAX_LENGTH)
    full = IncrementalDecoder(cached.model, MAX_LENGTH, use_cache=False, static_shapes=True)
    prefix = IncrementalDecoder(cached.model, MAX_LENGTH, use_cache=False)
    for search in (greedy_search, beam_search):
        np.testing.assert_array_equal(
            search(full, source, start_id=2, end_id=3), search(prefix, source, start_id=2, end_id=3)
        )


def test_the_search_without_xla_runs_no_xla_op(varied_run):
    """Without XLA no op of the search compiles itself: `XlaDynamicUpdateSlice` (the cache
    write) did, for every new batch size, 2-3 s each on a 2-core CPU."""
    translator = Translator.from_run_dir(varied_run, jit_compile=False)
    for beam_size in (1, 3):
        graph = translator._ranked_search(beam_size).get_concrete_function().graph.as_graph_def()
        kinds = {node.op for node in graph.node}
        kinds |= {node.op for function in graph.library.function for node in function.node_def}
        assert not any(kind.startswith("Xla") for kind in kinds), sorted(kinds)


def test_defaults_are_those_of_the_command_line_and_the_cache_changes_nothing(varied_run):
    """`jit_compile="auto"`, as `keras-transformer translate`: XLA for the cached search, for
    the uncached one only on a GPU; the two give the same translations."""
    cached = Translator.from_run_dir(varied_run)
    uncached = Translator.from_run_dir(varied_run, use_cache=False)
    gpu = bool(tf.config.list_physical_devices("GPU"))
    assert (cached.jit_compile, uncached.jit_compile) == (True, gpu)
    assert resolve_jit_compile("auto", use_cache=False) is gpu
    assert resolve_jit_compile("off") is False and resolve_jit_compile("on", False) is True
    # a few texts known ahead (translate's TEXT arguments, a run's evaluation): no compiling
    assert resolve_jit_compile("auto", texts=FEW_TEXTS) is False
    assert resolve_jit_compile("auto", texts=FEW_TEXTS + 1) is True
    assert resolve_jit_compile("on", texts=1) is True
    for beam_size in (1, 3):
        assert cached(TEXTS, beam_size=beam_size) == uncached(TEXTS, beam_size=beam_size)


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_an_unknown_jit_compile_is_refused_before_loading(tmp_path, bad):
    with pytest.raises(ValueError, match=f"jit_compile must be True, False, 'auto'.*{bad!r}"):
        Translator.from_run_dir(tmp_path / "nowhere", jit_compile=bad)


@pytest.mark.parametrize("use_cache", [True, False])
def test_jit_compile_gives_identical_translations(varied_run, use_cache):
    plain = Translator.from_run_dir(varied_run, use_cache=use_cache, jit_compile=False)
    jit = Translator.from_run_dir(varied_run, use_cache=use_cache, jit_compile=True)
    for beam_size in (1, 3):
        assert jit(TEXTS, beam_size=beam_size) == plain(TEXTS, beam_size=beam_size)
    # the same XLA function serves a new batch size and source length
    assert jit(TEXTS[:2]) == plain(TEXTS[:2])
    # and any number of alphas ranked over one search (padded to RANKED_ALPHAS; more: groups)
    alphas = [0.1 * i for i in range(RANKED_ALPHAS + 1)]
    assert jit.translate_ranked(TEXTS, 3, alphas) == plain.translate_ranked(TEXTS, 3, alphas)


def test_empty_and_whitespace_inputs_translate_to_empty_strings(translators):
    cached, uncached = translators
    texts = ["", "one two", " ", "\t\n", "four five"]
    for translator in (cached, uncached):
        for beam_size in (1, 3):
            out = translator(texts, beam_size=beam_size)
            assert out[0] == out[2] == out[3] == ""
            assert out[1] and out[4]  # the varied model says something for real inputs
            assert out[1] == translator(["one two"], beam_size=beam_size)[0]
    tokens = cached.translate_tokens(texts)
    assert not tokens[[0, 2, 3]].any() and tokens[[1, 4]].any()
    assert cached([""]) == [""]


def test_beam_size_one_equals_greedy(translators):
    cached, _ = translators
    beam = beam_search(
        cached.decoder,
        encode_source(TEXTS, cached.source_tokenizer, MAX_LENGTH),
        start_id=2,
        end_id=3,
        beam_size=1,
    ).numpy()
    beam[BLANK] = 0  # the Translator's rule: no source tokens, no output
    np.testing.assert_array_equal(cached.translate_tokens(TEXTS, beam_size=1), beam)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_batch_equals_one_by_one(translators, beam_size):
    cached, _ = translators
    batch = cached(TEXTS, beam_size=beam_size)
    single = [cached([text], beam_size=beam_size)[0] for text in TEXTS]
    assert batch == single


_FINISHED_BEAMS: dict = {}


def reference_beam(model, source, k, alpha, max_length, start=2, end=3):
    """Beam search in plain NumPy over full-model runs (no cache, no tf.function).

    The length penalty only ranks the finished beams, so the beams of one (model, source) are
    searched once and ranked for each alpha the tests ask for."""
    key = (model, np.asarray(source).tobytes(), k, max_length, start, end)
    if key not in _FINISHED_BEAMS:
        _FINISHED_BEAMS[key] = _reference_beams(model, source, k, max_length, start, end)
    beams = _FINISHED_BEAMS[key]

    def penalty(tokens):
        length = sum(1 for t in tokens[1:] if t != 0)
        return ((5 + length) / 6) ** alpha

    best = max(beams, key=lambda b: b[1] / penalty(b[0]))
    return [t for t in best[0][1:] if t != 0]


def _reference_beams(model, source, k, max_length, start, end):
    """The `k` beams (tokens, log-probability, finished) the plain search ends with."""
    beams = [([start], 0.0, False)]
    for _ in range(max_length - 1):
        candidates = []
        for tokens, score, done in beams:
            if done:
                candidates.append((tokens + [0], score, True))
                continue
            logits = np.asarray(model({"source": source[None], "target": np.array([tokens])}))
            logp = (
                logits[0, -1]
                - np.log(np.exp(logits[0, -1] - logits[0, -1].max()).sum())
                - logits[0, -1].max()
            )
            for token in np.argsort(-logp)[:k]:
                candidates.append((tokens + [int(token)], score + float(logp[token]), token == end))
        candidates.sort(key=lambda c: -c[1])
        beams = candidates[:k]
        if all(done for _, _, done in beams):
            break
    return beams


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_beam_search_matches_a_plain_reference(translators, alpha):
    cached, _ = translators
    source = np.asarray(encode_source(SOURCES[:3], cached.source_tokenizer, MAX_LENGTH))
    ours = beam_search(cached.decoder, source, start_id=2, end_id=3, beam_size=3, alpha=alpha)
    for row, src in zip(ours.numpy(), source, strict=True):
        expected = reference_beam(cached.model, src, 3, alpha, MAX_LENGTH)
        assert [t for t in row if t != 0] == expected


def test_one_beam_search_ranked_by_several_alphas_matches_the_reference_for_each(translators):
    """`beam_search_ranked`: rows of alpha i are the plain reference's best beam under alpha i."""
    cached, _ = translators
    alphas = [0.0, 0.6, 2.5]
    source = np.asarray(encode_source(SOURCES[:3], cached.source_tokenizer, MAX_LENGTH))
    ranked = beam_search_ranked(
        cached.decoder, source, start_id=2, end_id=3, beam_size=3, alphas=alphas
    ).numpy()
    assert ranked.shape == (len(alphas) * 3, MAX_LENGTH - 1)
    for i, alpha in enumerate(alphas):
        for row, src in zip(ranked[i * 3 : (i + 1) * 3], source, strict=True):
            assert [t for t in row if t != 0] == reference_beam(
                cached.model, src, 3, alpha, MAX_LENGTH
            )


@pytest.mark.parametrize("beam_size", [1, 3])
def test_translate_ranked_equals_one_call_per_alpha(translators, beam_size):
    cached, _ = translators
    alphas = [0.0, 1.0, 2.5]
    ranked = cached.translate_ranked(TEXTS, beam_size, alphas)
    assert ranked == [cached(TEXTS, beam_size=beam_size, alpha=a) for a in alphas]
    if beam_size == 1:  # alpha does not touch greedy search
        assert ranked[0] == ranked[1] == ranked[2]
    with pytest.raises(ValueError, match="alpha must be a number >= 0"):
        cached.translate_ranked(TEXTS, beam_size, [])
    with pytest.raises(ValueError, match=r"alpha must be a number in \[0, inf\).*-1\.0"):
        cached(TEXTS, beam_size=beam_size, alpha=-1.0)
    with pytest.raises(ValueError, match="beam_size"):  # the same type for the same method
        cached(TEXTS, beam_size=0, alpha=0.6)
    with pytest.raises(TypeError, match="list of strings"):
        cached.translate_ranked("one two", beam_size, [0.6])


def test_shared_embeddings_and_pre_ln_models_decode_the_same_with_cache():
    model = build_transformer(
        30,
        30,
        num_layers=2,
        d_model=16,
        num_heads=2,
        dff=32,
        share_embeddings=True,
        norm_first=True,
    )
    source = tf.constant([[2, 5, 6, 7, 3], [2, 9, 3, 0, 0]])
    a = greedy_search(IncrementalDecoder(model, 8), source, start_id=2, end_id=3)
    b = greedy_search(IncrementalDecoder(model, 8, use_cache=False), source, start_id=2, end_id=3)
    np.testing.assert_array_equal(a, b)


def test_errors(tiny_run, translators, tmp_path):
    cached, _ = translators
    with pytest.raises(TypeError, match="list of strings"):
        cached("one two")
    with pytest.raises(ValueError, match="beam_size"):
        cached(["one"], beam_size=0)
    with pytest.raises(ValueError, match="beam_size"):
        cached.search_function(beam_size=0)
    assert cached([]) == []
    with pytest.raises(FileNotFoundError, match="not a run directory"):
        Translator.from_run_dir(tmp_path)
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("tokenizers", "config.json"):
        src = tiny_run / name
        dst = broken / name
        if src.is_dir():
            import shutil

            shutil.copytree(src, dst)
        else:
            dst.write_text(src.read_text())
    (broken / "model.keras").write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match="model.keras is damaged"):
        Translator.from_run_dir(broken)


@pytest.mark.parametrize("max_length", [MAX_LENGTH + 1, 200])
def test_max_length_beyond_the_position_table_is_a_clear_error(tiny_run, translators, max_length):
    message = f"max_length={max_length} exceeds the model's position table of {MAX_LENGTH}"
    with pytest.raises(ValueError, match=message) as error:
        Translator.from_run_dir(tiny_run, max_length=max_length)
    assert "\n" not in str(error.value) and f"<= {MAX_LENGTH}" in str(error.value)
    cached, _ = translators
    with pytest.raises(ValueError, match=message):
        cached(["one"], max_length=max_length)


@pytest.mark.parametrize(
    "max_length, error, message",
    [
        (2, ValueError, "max_length must be an integer >= 3"),
        (0, ValueError, "max_length must be an integer >= 3"),
        (-1, ValueError, "max_length must be an integer >= 3"),
        (2.5, TypeError, "max_length must be an integer;"),  # the type: TypeError, as everywhere
    ],
)
def test_too_small_max_length_is_rejected_before_tracing(translators, max_length, error, message):
    cached, _ = translators
    traced = dict(cached._searches)
    with pytest.raises(error, match=f"{message}.*{max_length}") as raised:
        Translator(
            cached.model, cached.source_tokenizer, cached.target_tokenizer, max_length=max_length
        )
    assert "\n" not in str(raised.value)
    with pytest.raises(error, match=message):
        cached(["one"], max_length=max_length)
    assert cached._searches == traced  # nothing was traced


def test_a_smaller_max_length_is_accepted_and_reused(translators):
    cached, _ = translators
    short = cached(TEXTS, max_length=5)
    assert all(len(t.split()) <= 4 for t in short)
    assert cached(TEXTS, max_length=5) == short
    assert list(cached._resized) == [5]


@pytest.mark.parametrize("content", ["[]", '"text"', "{not json"])
def test_a_damaged_config_is_named_when_loading_from_python(tiny_run, tmp_path, content):
    import shutil

    from keras_transformer.errors import DamagedRunError

    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run, run_dir)
    (run_dir / "config.json").write_text(content)
    with pytest.raises(DamagedRunError, match="config.json is damaged"):
        Translator.from_run_dir(run_dir)


def _new_translator_of(other):
    """A new `Translator` (its own searches, not yet traced) of `other`'s model, without XLA."""
    return Translator(
        other.model,
        other.source_tokenizer,
        other.target_tokenizer,
        max_length=other.max_length,
        jit_compile=False,
    )


def test_separate_translators_are_not_reported_as_retracing(tiny_run):
    """Seven translators of one model, each traced once: TensorFlow's retracing warning (it
    counts traces by code object, and printed it into tutorial 07's test run) is dropped for
    them; a function that really retraces is still reported."""
    import keras

    def seven_translators():
        run = Translator.from_run_dir(tiny_run, jit_compile=False)
        for _ in range(7):
            _new_translator_of(run)(["a b"])

    try:
        assert retracing_warnings(seven_translators) == []
    finally:
        keras.backend.clear_session()


def test_length_penalties_share_one_trace_and_match_the_eager_search(translators):
    """alpha is an input of the search's tf.function: the three alphas `train` compares trace it
    once, and each gives what the eager search with that alpha gives."""
    _, uncached = translators
    translator = _new_translator_of(uncached)
    texts = list(SOURCES)
    for alpha in (0.6, 1.0, 1.4, 0.0):
        traced = translator(texts, beam_size=3, alpha=alpha)
        ids = translator.translate_tokens(texts, beam_size=3, alpha=alpha)
        eager = [t.decode() for t in translator.target_tokenizer.detokenize(ids).numpy()]
        assert traced == eager, alpha
    assert list(translator._searches) == [(3, False)]
    assert translator._searches[(3, False)].experimental_get_tracing_count() == 1
