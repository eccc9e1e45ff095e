"""The pruning rule (patchkit.bench.stats.relevance) called with values: footprints and coverage, no git."""

from __future__ import annotations

from patchkit.bench.stats.relevance import (
    Change,
    ChangeKind,
    Footprint,
    Ran,
    Reason,
    judge,
    judge_change,
    suspects,
)

MOD = "python/sglang/srt/layers/linear.py"
OTHER = "python/sglang/srt/models/llama.py"
CONFIG = "python/sglang/srt/layers/moe/configs/E=384.json"

RAN = Ran(
    granularity="function",
    functions=frozenset({(MOD, "ColumnParallelLinear.forward"), (MOD, "apply_weights")}),
    modules=frozenset({MOD}),
    data_files=frozenset({CONFIG}),
)


def body(path: str, qualname: str | None) -> Change:
    return Change(path, ChangeKind.BODY, qualname, "body")


def module(path: str) -> Change:
    return Change(path, ChangeKind.MODULE, None, "module statements")


def data(path: str) -> Change:
    return Change(path, ChangeKind.DATA, None, "changed")


def build(path: str) -> Change:
    return Change(path, ChangeKind.BUILD, None, "changed")


def fmt(path: str) -> Change:
    return Change(path, ChangeKind.FORMAT, None, "same code")


def test_a_body_that_ran_is_relevant_one_that_did_not_is_inert() -> None:
    assert judge_change(body(MOD, "ColumnParallelLinear.forward"), RAN) is Reason.RAN
    assert judge_change(body(MOD, "ColumnParallelLinear.weight_loader"), RAN) is Reason.NOT_RUN
    assert judge_change(body(OTHER, "LlamaModel.forward"), RAN) is Reason.NOT_IMPORTED


def test_a_function_is_matched_by_file_and_qualified_name() -> None:
    # the same name in another file, or a method of another class, is another function
    assert judge_change(body(OTHER, "apply_weights"), RAN) is Reason.NOT_IMPORTED
    assert judge_change(body(MOD, "RowParallelLinear.forward"), RAN) is Reason.NOT_RUN
    assert judge_change(body(MOD, "forward"), RAN) is Reason.NOT_RUN


def test_module_level_is_relevant_where_imported() -> None:
    assert judge_change(module(MOD), RAN) is Reason.IMPORTED
    assert judge_change(module(OTHER), RAN) is Reason.NOT_IMPORTED


def test_data_is_relevant_where_read_or_imported() -> None:
    assert judge_change(data(CONFIG), RAN) is Reason.READ
    assert judge_change(data("docs/index.md"), RAN) is Reason.NOT_READ
    extension = "python/sglang/_kernels.so"
    assert judge_change(data(extension), RAN) is Reason.NOT_READ
    loaded = Ran("function", frozenset(), frozenset({extension}), frozenset())
    assert judge_change(data(extension), loaded) is Reason.IMPORTED


def test_a_python_file_read_as_a_file_is_relevant_whatever_changed() -> None:
    template = "python/sglang/srt/templates/kernel.py"
    read = Ran("function", frozenset(), frozenset(), frozenset({template}))
    assert judge_change(body(template, "kernel"), read) is Reason.READ
    assert judge_change(module(template), read) is Reason.READ


def test_a_comment_in_a_python_file_read_as_a_file_is_relevant() -> None:
    """A read sees the file's bytes: "compiles to the same code" vouches for an import, never for a read."""
    template = "python/sglang/srt/templates/kernel.py"
    read = Ran("function", frozenset(), frozenset({template}), frozenset({template}))
    assert judge_change(fmt(template), read) is Reason.READ
    assert judge(Footprint("c1", (fmt(template),)), read).relevant
    imported = Ran("function", frozenset(), frozenset({template}), frozenset())
    assert judge_change(fmt(template), imported) is Reason.SAME_CODE


def test_a_build_input_is_never_inert() -> None:
    nothing = Ran("function", frozenset(), frozenset(), frozenset())
    assert judge_change(build("python/pyproject.toml"), nothing) is Reason.BUILD
    assert judge(Footprint("c1", (build("sgl-kernel/csrc/gemm.cu"),)), nothing).relevant


def test_same_code_is_inert() -> None:
    assert judge_change(fmt(MOD), RAN) is Reason.SAME_CODE


def test_nothing_is_inert_while_the_probe_is_blind() -> None:
    blind = Ran(RAN.granularity, RAN.functions, RAN.modules, RAN.data_files, ("a worker that is not Python: nvcc",))
    for change in (body(OTHER, "f"), module(OTHER), data("docs/x.md"), fmt(MOD)):
        assert judge_change(change, blind) is Reason.BLIND
    assert judge_change(build("setup.py"), blind) is Reason.BUILD
    assert judge(Footprint("c1", (data("docs/x.md"),)), blind).relevant


def test_file_granularity_makes_a_body_in_a_module_that_ran_relevant() -> None:
    files = Ran("file", frozenset(), frozenset({MOD}), frozenset())
    assert judge_change(body(MOD, "never_called"), files) is Reason.FILE_GRANULARITY
    assert judge_change(body(OTHER, "f"), files) is Reason.NOT_IMPORTED
    unknown = Ran("line", frozenset(), frozenset({MOD}), frozenset())  # a granularity it does not know: files
    assert judge_change(body(MOD, "never_called"), unknown) is Reason.FILE_GRANULARITY


def test_where_in_doubt_relevant() -> None:
    assert judge_change(body(MOD, None), RAN) is Reason.UNKNOWN
    assert judge_change(body(MOD, ""), RAN) is Reason.UNKNOWN


def test_a_commit_is_inert_only_when_every_change_is() -> None:
    inert = Footprint("c1", (body(MOD, "ColumnParallelLinear.weight_loader"), data("docs/x.md"), module(OTHER)))
    verdict = judge(inert, RAN)
    assert verdict.inert and not verdict.relevant
    assert [j.reason for j in verdict.why] == [Reason.NOT_RUN, Reason.NOT_READ, Reason.NOT_IMPORTED]
    mixed = Footprint("c2", (*inert.changes, body(MOD, "apply_weights")))
    verdict = judge(mixed, RAN)
    assert verdict.relevant
    assert [(j.change.qualname, j.reason) for j in verdict.why] == [("apply_weights", Reason.RAN)]


def test_an_empty_commit_is_inert() -> None:
    assert judge(Footprint("c1", ()), RAN).inert


def test_suspects_are_the_relevant_commits_in_line_order_with_what_makes_them_relevant() -> None:
    line = (
        Footprint("c1", (data("docs/x.md"),)),
        Footprint("c2", (body(MOD, "apply_weights"), body(MOD, "unused"))),
        Footprint("c3", (module(OTHER),)),
        Footprint("c4", (data(CONFIG), build("python/pyproject.toml"))),
    )
    found = suspects(line, RAN)
    assert [s.commit for s in found] == ["c2", "c4"]
    assert [(j.change.qualname, j.reason) for j in found[0].why] == [("apply_weights", Reason.RAN)]
    assert [j.reason for j in found[1].judgements] == [Reason.READ, Reason.BUILD]


def test_suspects_go_by_evidence_even_while_the_probe_is_blind() -> None:
    line = (Footprint("c1", (data("docs/x.md"),)), Footprint("c2", (body(MOD, "apply_weights"),)))
    blind = Ran(RAN.granularity, RAN.functions, RAN.modules, RAN.data_files, ("an exec the probe did not follow",))
    assert [s.commit for s in suspects(line, blind)] == ["c2"]
    assert all(judge(f, blind).relevant for f in line)
