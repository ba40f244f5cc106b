"""Per-stage path dictionaries and ``Stage.get_path_dictionary`` (0.3.0).

Every stage owns its dictionary: a path list, token or path of one stage is refused by every
other with a clear error, and a token is never taken for a path (nor a path for a list).
``PathDictionary(stage)`` borrows the stage's dictionary without keeping the stage alive.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator

import numpy as np
import ovstage
import pytest
from ovstage import OVX_API_ERROR, ErrorCode, OrdinalRange, OvstageError, OvxError

OTHER = "of another stage's path dictionary"


@pytest.fixture
def two() -> Iterator[tuple[ovstage.Stage, ovstage.Stage]]:
    a, b = ovstage.Stage("dict-a"), ovstage.Stage("dict-b")
    try:
        yield a, b
    finally:
        gc.collect()
        b.destroy()
        a.destroy()


# ---------------------------------------------------------------- PathDictionary(stage)


@pytest.mark.parametrize("bad", [None, "stage", 3, object()], ids=["None", "str", "int", "object"])
def test_dictionary_requires_a_stage(bad: object) -> None:
    with pytest.raises(TypeError, match=r"stage must be an ovstage\.Stage"):
        ovstage.PathDictionary(bad)  # type: ignore[arg-type]


def test_dictionary_has_no_private_stage() -> None:
    with pytest.raises(TypeError):
        ovstage.PathDictionary()  # type: ignore[call-arg]


def test_destroy_drops_only_the_borrow(stage) -> None:
    first = ovstage.PathDictionary(stage)
    token = first.intern_token("temperature")
    with ovstage.PathDictionary(stage) as second:
        assert second.intern_token("temperature") == token
    first.destroy()
    first.destroy()  # idempotent
    for dictionary in (first, second):
        with pytest.raises(OvxError) as info:
            dictionary.intern_token("temperature")
        assert info.value.code == OVX_API_ERROR
        assert info.value.message == "PathDictionary has been destroyed"
    # The stage and its dictionary live on.
    assert ovstage.PathDictionary(stage).token_to_string(token) == "temperature"
    assert stage.get_path_dictionary() is not None


def test_dictionary_does_not_keep_its_stage_alive() -> None:
    stage = ovstage.Stage("collected")
    dictionary = ovstage.PathDictionary(stage)
    dictionary.intern_token("x")
    del stage
    gc.collect()
    with pytest.raises(OvxError) as info:
        dictionary.intern_token("x")
    assert info.value.message == "PathDictionary backing Stage has been destroyed"


def test_method_parameter_names(paths) -> None:
    token = paths.intern_token(string="World")
    assert paths.token_to_string(token=token) == "World"
    path = paths.intern_path(path="/World")
    assert paths.path_to_string(primpath=path) == "/World"
    with paths.create_path_list(primpaths=[path]) as plist:
        paths.add_path_list_reference(path_list=plist)
        assert paths.path_list_count(path_list=plist) == 1
        assert paths.get_paths(path_list=plist) == [path]
        assert paths.get_path_strings(path_list=plist) == ["/World"]
        paths.destroy_path_list(path_list=plist)  # the added reference
    with paths.create_path_list_from_strings(paths=["/A"]) as plist:
        assert paths.path_list_count(plist) == 1


# ---------------------------------------------------------------- get_path_dictionary


def test_get_path_dictionary_is_the_same_for_a_stage_and_differs_across(two) -> None:
    a, b = two
    assert a.get_path_dictionary() == a.get_path_dictionary()
    assert hash(a.get_path_dictionary()) == hash(a.get_path_dictionary())
    assert a.get_path_dictionary() != b.get_path_dictionary()
    a.destroy()
    with pytest.raises(OvstageError) as info:
        a.get_path_dictionary()
    assert info.value.code == ErrorCode.INVALID_HANDLE


# ---------------------------------------------------------------- another stage's handles


def test_another_stages_path_list_is_refused_and_nothing_changes(two) -> None:
    a, b = two
    da, db = ovstage.PathDictionary(a), ovstage.PathDictionary(b)
    with da.create_path_list_from_strings(["/World", "/World/A"]) as plist:
        with pytest.raises(OvstageError) as info:
            b.query_from_path_list(plist)
        assert info.value.code == ErrorCode.INVALID_HANDLE
        assert f"it is a path list {OTHER}" in info.value.message
        op = b.get_hierarchy_async(plist, 1, ovstage.HierarchyRelation.PARENT).op
        assert op.status == ErrorCode.INVALID_HANDLE
        for call in (db.path_list_count, db.get_paths, db.add_path_list_reference):
            with pytest.raises(OvxError) as dict_info:
                call(plist)
            assert dict_info.value.code == OVX_API_ERROR
            assert "Path list handle was not found" in dict_info.value.message
            assert OTHER in dict_info.value.message
        with pytest.raises(OvxError, match="Path list handle was not found"):
            db.destroy_path_list(int(plist))
        # A's list is untouched: one reference, its paths, usable by A.
        assert da.get_path_strings(plist) == ["/World", "/World/A"]
        with a.query_from_path_list(plist) as query:
            a.write_attribute(query, "t", 1, np.ones(2, np.float32), is_array=False).wait()
    with pytest.raises(OvxError, match="not found"):
        da.path_list_count(int(plist))  # the owner's release was the last reference
    assert b._diagnostics()["path_lists"] == 0


def test_another_stages_tokens_and_paths_are_refused(two) -> None:
    a, b = two
    da, db = ovstage.PathDictionary(a), ovstage.PathDictionary(b)
    token_a, path_a = da.intern_token("World"), da.intern_path("/World")
    token_b, path_b = db.intern_token("World"), db.intern_path("/World")
    with pytest.raises(OvxError, match=f"it is a token {OTHER}"):
        db.token_to_string(token_a)
    with pytest.raises(OvxError, match=f"it is a path {OTHER}"):
        db.path_to_string(path_a)
    missing = rf"paths\[1\]: Prim path handle was not found in this dictionary: {path_a}"
    with pytest.raises(OvxError, match=missing):
        db.create_path_list([path_b, path_a])
    assert db.token_to_string(token_b) == "World"
    assert db.path_to_string(path_b) == "/World"
    assert b._diagnostics()["path_lists"] == 0


def test_an_attribute_token_of_another_stage_is_refused(two, make_query) -> None:
    a, b = two
    token_a = ovstage.PathDictionary(a).intern_token("temperature")
    plist = ovstage.PathDictionary(b).create_path_list_from_strings(["/A"])
    with plist, b.query_from_path_list(plist) as query:
        op = b.write_attribute(query, token_a, 1, np.ones(1, np.float32), is_array=False)
        assert op.status == ErrorCode.INVALID_ARGUMENT
        assert "is not a token of this stage's path dictionary" in op.error_message()
        with pytest.raises(OvstageError) as info:
            b.read_attributes(query, [token_a], OrdinalRange.latest(1)).wait()
        assert info.value.code == ErrorCode.INVALID_ARGUMENT


def test_attribute_names_are_tokens_of_each_stage(two) -> None:
    """The same name written through the fast path (ndarray, str name) in two stages: each
    stage resolves it in its own dictionary and reads it back under its own token."""
    a, b = two
    for stage, value in ((a, 1.0), (b, 2.0)):
        plist = ovstage.PathDictionary(stage).create_path_list_from_strings(["/P"])
        with plist, stage.query_from_path_list(plist) as query:
            stage.write_attribute(
                query, "temperature", 1, np.full(1, value, np.float32), is_array=False
            ).wait()
            stage.advance_write_floor(1).wait()
            with stage.read_attributes(query, ["temperature"], OrdinalRange.latest(1)) as rd:
                group = rd.fetch_next()
                with group:
                    name = ovstage.PathDictionary(stage).token_to_string(group.attribute)
                    assert name == "temperature"
                    assert np.from_dlpack(group.dlpack(0)).tolist() == [value]


# ---------------------------------------------------------------- kinds of handles


def test_a_token_is_not_a_path(paths) -> None:
    for i in range(16):  # make path handles that a token's number would fall on
        paths.intern_path(f"/p{i}/q")
    token = paths.intern_token("x")
    with pytest.raises(OvxError) as info:
        paths.create_path_list([token])
    missing = f"paths[0]: Prim path handle was not found in this dictionary: {token}"
    assert info.value.message.startswith(missing)
    assert "it is a token handle, not a path" in info.value.message
    with pytest.raises(OvxError, match="it is a token handle, not a path"):
        paths.path_to_string(token)


def test_a_path_is_not_a_token_nor_a_list(stage, paths) -> None:
    path = paths.intern_path("/World")
    for _ in range(4):
        with paths.create_path_list([path]):
            pass
    with pytest.raises(OvxError, match="it is a path handle, not a token"):
        paths.token_to_string(path)
    with pytest.raises(OvxError, match="it is a path handle, not a path list"):
        paths.path_list_count(path)
    with pytest.raises(OvstageError) as info:
        stage.query_from_path_list(path)
    assert info.value.code == ErrorCode.INVALID_HANDLE


# ---------------------------------------------------------------- ownership per stage


def test_list_ownership_is_shared_by_every_wrapper_of_a_stage(stage) -> None:
    first, second = ovstage.PathDictionary(stage), ovstage.PathDictionary(stage)
    plist = first.create_path_list_from_strings(["/A"])
    second.add_path_list_reference(plist)
    first.destroy_path_list(int(plist))  # consumes the added reference first
    assert not plist.released
    assert second.path_list_count(plist) == 1
    second.destroy_path_list(int(plist))  # then the owner's
    assert plist.released
    first.destroy()
    with pytest.raises(OvxError, match="already released"):
        plist.release()


def test_destroy_path_list_releases_one_reference_per_call(paths) -> None:
    plist = paths.create_path_list_from_strings(["/A"])
    paths.add_path_list_reference(plist)
    paths.destroy_path_list(plist)  # the PathList itself: still the added reference first
    assert not plist.released
    assert paths.path_list_count(plist) == 1
    paths.destroy_path_list(plist)
    assert plist.released
    with pytest.raises(OvxError, match="not found"):
        paths.path_list_count(int(plist))


def test_a_list_outliving_its_stage_is_released_silently() -> None:
    stage = ovstage.Stage("outlived")
    plist = ovstage.PathDictionary(stage).create_path_list_from_strings(["/A"])
    kept = ovstage.PathDictionary(stage).create_path_list_from_strings(["/B"])
    stage.destroy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        del plist
        gc.collect()
        kept.release()  # nothing left to release: the list went with the dictionary
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert kept.released
