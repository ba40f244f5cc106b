"""Path dictionary and PathList (spec §1.2, §3.2, §3.4, §5.10)."""

from __future__ import annotations

import copy
import json
import pickle

import numpy as np
import ovstage
import pytest
from ovstage import OVX_API_ERROR, OvxError

# ---------------------------------------------------------------- tokens


def test_token_interning_is_idempotent(paths) -> None:
    token = paths.intern_token("temperature")
    assert token != 0
    assert paths.intern_token("temperature") == token
    assert paths.intern_token("pressure") != token
    assert paths.token_to_string(token) == "temperature"


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "must be non-empty"), ("a\x00b", "Token string contains embedded NUL")],
    ids=["empty", "nul"],
)
def test_bad_token_string_raises_ovx_error(paths, text, message) -> None:
    with pytest.raises(OvxError) as info:
        paths.intern_token(text)
    assert info.value.code == OVX_API_ERROR
    assert message in info.value.message


def test_token_must_be_a_str(paths) -> None:
    with pytest.raises(TypeError):
        paths.intern_token(b"temperature")  # type: ignore[arg-type]


def test_unknown_token_raises_ovx_error(paths) -> None:
    with pytest.raises(OvxError):
        paths.token_to_string(2**63 + 12345)


def test_numpy_integer_is_accepted_as_a_token(paths) -> None:
    token = paths.intern_token("temperature")
    assert paths.token_to_string(np.uint64(token)) == "temperature"


# ---------------------------------------------------------------- paths


def test_path_interning_is_idempotent(paths) -> None:
    path = paths.intern_path("/World/A")
    assert path != 0
    assert paths.intern_path("/World/A") == path
    assert paths.intern_path("/World/B") != path
    assert paths.path_to_string(path) == "/World/A"


def test_root_path_round_trips(paths) -> None:
    root = paths.intern_path("/")
    assert root != 0
    assert paths.path_to_string(root) == "/"


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "Path string must be non-empty"), ("/A\x00B", "Path string contains embedded NUL")],
    ids=["empty", "nul"],
)
def test_bad_path_string_raises_ovx_error(paths, text, message) -> None:
    with pytest.raises(OvxError) as info:
        paths.intern_path(text)
    assert message in info.value.message
    with pytest.raises(OvxError) as from_list:
        paths.create_path_list_from_strings(["/World/A", text])
    assert message in from_list.value.message


# One path has one spelling: "/" is the root and every other path is "/" followed by
# components joined by single "/", none empty, "." or "..".
MALFORMED_PATHS = {
    "//": 'Path string "//": component 0 is empty',
    "///": 'Path string "///": component 0 is empty',
    "//A": 'Path string "//A": component 0 is empty',
    "/A//B": 'Path string "/A//B": component 1 is empty',
    "/A/": 'Path string "/A/": component 1 is empty',
    "/World/A/": 'Path string "/World/A/": component 2 is empty',
    "/A/./B": 'Path string "/A/./B": component 1 is "."',
    "/A/..": 'Path string "/A/..": component 1 is ".."',
    "World/A": "Path string must be absolute (start with '/'): \"World/A\"",
}


@pytest.mark.parametrize(("text", "message"), MALFORMED_PATHS.items(), ids=list(MALFORMED_PATHS))
def test_malformed_path_strings_are_rejected_naming_the_path(paths, text, message) -> None:
    with pytest.raises(OvxError) as info:
        paths.intern_path(text)
    assert info.value.code == OVX_API_ERROR
    assert message in info.value.message
    with pytest.raises(OvxError) as from_list:
        paths.create_path_list_from_strings(["/World/A", text])
    assert f"paths[1]: {message}" in from_list.value.message


def test_doubled_slash_is_not_the_root(paths) -> None:
    root = paths.intern_path("/")
    with pytest.raises(OvxError):
        paths.intern_path("//")
    assert paths.path_to_string(root) == "/"


@pytest.mark.parametrize("text", ["/.A", "/A.", "/A/B..C", "/ A ", "/A:B"])
def test_dots_and_spaces_inside_a_component_are_names(paths, text) -> None:
    assert paths.path_to_string(paths.intern_path(text)) == text


def test_malformed_paths_in_stage_calls_are_invalid_arguments(stage, paths) -> None:
    with paths.create_path_list_from_strings(["/A"]) as plist, stage.query_from_path_list(plist):
        pass
    with pytest.raises(ovstage.OvstageError) as info:
        stage.clone("/A/", ["/B"], 2)
    assert info.value.code == ovstage.ErrorCode.INVALID_ARGUMENT
    assert 'source_path: Path string "/A/"' in info.value.message
    with pytest.raises(ovstage.OvstageError) as info:
        stage.clone("/A", ["/B", "/C//D"], 2)
    assert 'target_paths[1]: Path string "/C//D"' in info.value.message
    flt = ovstage.Filter([ovstage.Predicate("usd-path", ovstage.FilterOp.IN, ["/A", "/A/"])])
    query = stage.query(flt)
    assert query.handle == 0
    assert query.op.status == ovstage.ErrorCode.INVALID_ARGUMENT
    assert 'values[1] is not a prim path: Path string "/A/"' in query.op.error_message()


def test_unknown_path_raises_ovx_error(paths) -> None:
    with pytest.raises(OvxError):
        paths.path_to_string(2**63 + 12345)


# ---------------------------------------------------------------- path lists


def test_path_lists_are_never_deduplicated(paths) -> None:
    with (
        paths.create_path_list_from_strings(["/A", "/A"]) as first,
        paths.create_path_list_from_strings(["/A", "/A"]) as second,
    ):
        assert int(first) != int(second)
        assert paths.path_list_count(first) == 2
        assert paths.get_path_strings(first) == ["/A", "/A"]
        assert paths.get_paths(first) == [paths.intern_path("/A")] * 2


def test_path_list_from_path_handles(paths) -> None:
    handles = [paths.intern_path("/B"), paths.intern_path("/A")]
    with paths.create_path_list(handles) as plist:
        assert paths.get_paths(plist) == handles
        assert paths.get_path_strings(plist) == ["/B", "/A"]


def test_empty_path_list_is_valid(paths) -> None:
    with paths.create_path_list([]) as plist:
        assert paths.path_list_count(plist) == 0
        assert paths.get_paths(plist) == []


def test_added_reference_keeps_the_list_alive_after_the_owner_releases(paths) -> None:
    plist = paths.create_path_list_from_strings(["/A", "/B"])
    paths.add_path_list_reference(plist)
    plist.release()
    assert plist.released
    assert paths.path_list_count(plist) == 2
    paths.destroy_path_list(int(plist))
    with pytest.raises(OvxError) as info:
        paths.path_list_count(plist)
    assert "Path list handle was not found" in info.value.message


def test_destroy_via_int_consumes_added_references_before_the_owners(paths) -> None:
    plist = paths.create_path_list_from_strings(["/A"])
    paths.add_path_list_reference(plist)
    paths.destroy_path_list(int(plist))
    assert not plist.released
    assert paths.path_list_count(plist) == 1
    paths.destroy_path_list(int(plist))
    assert plist.released


def test_released_list_is_unknown(paths) -> None:
    plist = paths.create_path_list_from_strings(["/A"])
    plist.release()
    with pytest.raises(OvxError) as info:
        paths.path_list_count(plist)
    assert "Path list handle was not found" in info.value.message


def test_double_release_of_an_owner_raises_ovx_error(paths) -> None:
    plist = paths.create_path_list_from_strings(["/A"])
    plist.release()
    with pytest.raises(OvxError):
        plist.release()
    with pytest.raises(OvxError):
        paths.destroy_path_list(plist)


def test_reference_operations_on_handle_zero_are_no_ops(paths) -> None:
    paths.add_path_list_reference(0)
    paths.destroy_path_list(0)


def test_leaving_a_with_block_releases_the_list(paths) -> None:
    with paths.create_path_list_from_strings(["/A"]) as plist:
        assert not plist.released
    assert plist.released


# ---------------------------------------------------------------- PathList as an int


def test_path_list_is_an_int_subclass_that_formats_like_its_int(paths) -> None:
    with paths.create_path_list_from_strings(["/A"]) as plist:
        handle = int(plist)
        assert isinstance(plist, int)
        assert plist == handle
        assert str(plist) == str(handle)
        assert f"{plist}" == f"{handle}"
        assert f"{plist:>8}" == f"{handle:>8}"
        assert hash(plist) == hash(handle)
        assert json.dumps({"list": plist}) == json.dumps({"list": handle})


def test_path_list_copies_are_plain_ints(paths) -> None:
    with paths.create_path_list_from_strings(["/A"]) as plist:
        for duplicate in (
            copy.copy(plist),
            copy.deepcopy(plist),
            pickle.loads(pickle.dumps(plist)),
        ):
            assert type(duplicate) is int
            assert duplicate == int(plist)


def test_path_list_repr_shows_ownership(paths) -> None:
    plist = paths.create_path_list_from_strings(["/A"])
    assert repr(plist) == f"PathList({int(plist)}, owned)"
    plist.release()
    assert repr(plist) == f"PathList({int(plist)}, released)"


# ---------------------------------------------------------------- queries from lists


def test_query_from_path_list_keeps_working_after_the_list_is_released(
    stage, paths, write_sealed, read_values
) -> None:
    plist = paths.create_path_list_from_strings(["/A", "/B"])
    with stage.query_from_path_list(plist) as query:
        plist.release()
        write_sealed(query, "t", 1, np.array([1, 2], np.int32))
        assert read_values(query, "t", 1) == {"/A": 1, "/B": 2}


def test_query_from_an_unknown_path_list_raises(stage) -> None:
    with pytest.raises(ovstage.OvstageError):
        stage.query_from_path_list(2**63 + 12345)


def test_private_dictionary_owns_and_destroys_its_stage() -> None:
    with ovstage.PathDictionary() as dictionary:
        token = dictionary.intern_token("temperature")
        assert dictionary.token_to_string(token) == "temperature"
    with pytest.raises(ovstage.OvstageError):
        dictionary.intern_token("temperature")


def test_dictionary_needs_a_stage_or_none() -> None:
    with pytest.raises(TypeError):
        ovstage.PathDictionary("stage")  # type: ignore[arg-type]
