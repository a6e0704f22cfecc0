"""LCLR paraphrase/entailment tasks over parse graphs: ILP == brute force, constraints (6)-(11)
hold, fixture graphs; the Link Grammar wrapper (skips where the parser is absent); RTE-5."""

import numpy as np
import pytest

from aligners.data.paths import data_root
from aligners.errors import AlignersInputError
from aligners.features.parse import (
    SentenceGraph,
    get_parser,
    graph_from_links,
    merge_graphs,
    split_sentences,
)
from aligners.ilp import brute_force_ilp, feasible
from aligners.models.lclr import load_lclr, make_task, save_lclr
from aligners.models.lclr.model import infer, train_lclr, train_two_stage, variable_scores

G_CAT = SentenceGraph(("the", "cat", "sat"), ("FW", "NN", "VB"), ((0, 1, "D"), (1, 2, "S")))
G_CAT2 = SentenceGraph(("a", "cat", "sits"), ("FW", "NN", "VB"), ((0, 1, "D"), (1, 2, "S")))
G_DOG = SentenceGraph(("dogs", "bark"), ("NN", "VB"), ((0, 1, "S"),))
G_CAT3 = SentenceGraph(("cat", "sat"), ("NN", "VB"), ((0, 1, "S"),))


def test_graph_from_links_fixture():
    words = ["LEFT-WALL", "Amrozi[!<CAPITALIZED-WORDS>]", "accused.v", "his", "brother.n-m",
             "[xx]", ".", "RIGHT-WALL"]
    links = [(0, 1, "Wd"), (1, 2, "Ss*s"), (2, 4, "Os"), (3, 4, "Ds**c"), (6, 7, "RW")]
    g = graph_from_links(words, links)
    assert g.words == ("Amrozi", "accused", "his", "brother", "xx", ".")
    assert g.pos == ("NNP", "VB", "FW", "NN", "FW", "FW")
    assert g.edges == ((0, 1, "S"), (1, 3, "O"), (2, 3, "D"))


def test_split_and_merge():
    assert split_sentences("Mr. Smith left. He came back.") == ["Mr. Smith left.",
                                                                "He came back."]
    g = merge_graphs([G_CAT3, G_DOG])
    assert g.words == ("cat", "sat", "dogs", "bark") and g.edges == ((0, 1, "S"), (2, 3, "S"))


@pytest.mark.parametrize("task_name", ["paraphrase", "entailment"])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("pair", [(G_CAT3, G_CAT3), (G_CAT3, G_DOG), (G_CAT3, G_CAT2)])
def test_ilp_equals_brute_force_and_constraints_hold(task_name, seed, pair):
    task = make_task(task_name)
    inst = task.build(*pair)
    if inst.num_vars > 16:
        pytest.skip("too many variables for brute force")
    w = np.random.default_rng(seed).normal(size=len(task.features))
    scores = variable_scores(inst, w)
    cons = task.constraints(inst)
    h, _ = infer(task, inst, w)
    assert feasible(h, cons)
    assert scores @ h == pytest.approx(brute_force_ilp(scores, cons).value)
    m = inst.meta
    for a in range(len(pair[0].words)):  # eq. (6): mapped once or deleted
        mapped = sum(h[s] for (i, _), s in m["wmap"].items() if i == a)
        if task_name == "paraphrase":
            assert h[m["del1"][a]] + mapped == 1
        else:  # sec. 5.2: no text-word deletion variables, a text word maps at most once
            assert mapped <= 1
    for b, d in enumerate(m["del2"]):  # eq. (7)
        assert h[d] + sum(h[s] for (_, j), s in m["wmap"].items() if j == b) == 1
    for s, _e, _f, wa, wb in m["emap"]:  # eqs. (10), (11)
        assert h[s] == (h[wa] and h[wb])
    if task_name == "entailment":
        assert not m["edel1"] and not m["edel2"] and not m["del1"]
    else:
        assert len(m["del1"]) == len(pair[0].words)


@pytest.mark.parametrize("seed", range(4))
def test_node_info_edge_features(seed):
    """NODE-INFO: an edge map carries its word maps' features x similarity; the ILP still
    equals brute force, and a model folder remembers the option."""
    plain, rich = make_task("paraphrase"), make_task("paraphrase", node_info=True)
    assert rich.config()["node_info"] and not plain.config()["node_info"]
    a, b = plain.build(G_CAT3, G_CAT3), rich.build(G_CAT3, G_CAT3)
    assert a.num_vars == b.num_vars and len(b.var_cols) > len(a.var_cols)
    names = rich.features.names
    em = [s for s, *_ in b.meta["emap"]]
    node = {names[c] for r, c in zip(b.var_rows, b.var_cols) if r in em}
    assert "em|node|lower_identical" in node and "em|node|wn_synonym" in node
    on_words = {names[c] for r, c in zip(b.var_rows, b.var_cols) if r not in em}
    assert not any(n.startswith("em|node|") for n in on_words)
    # identical words: similarity 1, so each endpoint adds lower_identical = 1 (x scale)
    s = em[0]
    col = rich.features.index("em|node|lower_identical")
    v = b.var_vals[(b.var_rows == s) & (b.var_cols == col)].sum()
    assert v == pytest.approx(2 * 10.0 / 4)
    w = np.random.default_rng(seed).normal(size=len(rich.features))
    scores = variable_scores(b, w)
    cons = rich.constraints(b)
    assert scores @ infer(rich, b, w)[0] == pytest.approx(brute_force_ilp(scores, cons).value)


def test_candidate_pruning_and_names():
    task = make_task("paraphrase")
    inst = task.build(G_CAT, G_CAT2)
    names = task.variable_names(inst)
    assert "1:cat=1:cat" in names and "2:sat=2:sits" in names
    assert not any(n.startswith("0:the=") and "cat" in n for n in names)  # unrelated pair pruned
    assert any(n.startswith("(1,2:S)=") for n in names)  # edge map via cat=cat, sat=sits


def test_train_and_roundtrip(tmp_path):
    task = make_task("paraphrase")
    graphs = {"the cat sat": G_CAT, "a cat sits": G_CAT2, "dogs bark": G_DOG,
              "cat sat": G_CAT3}
    task.graphs = dict(graphs)
    pairs = [("the cat sat", "a cat sits"), ("the cat sat", "dogs bark"),
             ("cat sat", "the cat sat"), ("dogs bark", "a cat sits"), ("cat sat", "a cat sits"),
             ("dogs bark", "cat sat")]
    labels = [1, 0, 1, 0, 1, 0]
    insts = [task.instance(a, b) for a, b in pairs]
    align = task.heuristic_weights()
    task.features.growing = False
    F = len(task.features)
    two = train_two_stage(task, insts, labels, align_weights=align[:F], num_features=F)
    joint, hist = train_lclr(task, insts, labels, w0=two.weights, num_features=F)
    assert hist["objective"][-1] <= hist["objective"][0] + 1e-9
    assert [joint.predict(x) for x in insts] == labels
    save_lclr(tmp_path / "m", joint, system="lclr")
    from aligners.export import read_model
    back = load_lclr(read_model(tmp_path / "m"))
    back.task.graphs = dict(graphs)
    for (a, b), x in zip(pairs, insts):
        assert back.score(back.task.instance(a, b)) == pytest.approx(joint.score(x))


def test_empty_sentence_error():
    task = make_task("paraphrase")
    task.graphs = {"x": SentenceGraph((), (), ()), "y": G_DOG}
    with pytest.raises(ValueError, match="empty"):
        task.instance("x", "y")
    with pytest.raises(AlignersInputError, match="unknown LCLR task"):
        make_task("summarisation")


@pytest.mark.skipif(not get_parser().available, reason="Link Grammar not installed "
                    "(apt-get install link-grammar link-grammar-dictionaries-en "
                    "python3-link-grammar)")
def test_link_grammar_parses_a_sentence():
    g = get_parser().parse("The cat sat on the mat .")
    assert tuple(w.lower() for w in g.words) == ("the", "cat", "sat", "on", "the", "mat", ".")
    assert (1, 2, "S") in g.edges  # subject link cat -> sat
    assert g.pos[1] == "NN" and g.pos[2] == "VB"
    assert all(0 <= a < b < len(g.words) for a, b, _ in g.edges)


@pytest.mark.skipif(not (data_root() / "rte5-xnlp").exists(), reason="shipped data absent")
def test_rte5_reader_two_way():
    from aligners.data.datasets import load
    dev = load("rte5-xnlp", "dev")
    assert len(dev) == 600 and sum(p.label for p in dev) == 299
    assert {p.meta["three_way"] for p in dev} == {"ENTAILMENT", "UNKNOWN", "CONTRADICTION"}
    assert dev[0].text2 == "Claudia Lawrence is 35 years old."


def test_rte5_reader_errors(tmp_path):
    from aligners.data.labeled import read_rte5
    f = tmp_path / "r.xml"
    f.write_text('<d><pair id="1" entailment="MAYBE"><t>a</t><h>b</h></pair></d>')
    with pytest.raises(AlignersInputError, match="r.xml: pair 1"):
        read_rte5(f)


def test_negation_marks_and_features():
    """Neg (Table 2): a word linked to or just after a negation marker is negated; a word map
    between a negated and a plain word gets `wm|neg_mismatch`, two negated words
    `wm|neg_both`."""
    from aligners.models.lclr.paraphrase import negated
    g_not = SentenceGraph(("cat", "did", "not", "sit"), ("NN", "VB", "FW", "VB"),
                          ((0, 1, "S"), (1, 2, "N"), (1, 3, "I")))
    g_sit = SentenceGraph(("cat", "did", "sit"), ("NN", "VB", "VB"), ((0, 1, "S"), (1, 2, "I")))
    assert negated(g_not) == {1, 3} and negated(g_sit) == frozenset()
    task = make_task("paraphrase")
    names = task.features.names
    inst = task.build(g_not, g_sit)
    row = inst.meta["wmap"][3, 2]  # sit = sit, negated on one side only
    got = {names[c] for r, c in zip(inst.var_rows, inst.var_cols) if r == row}
    assert "wm|neg_mismatch" in got and "wm|neg_both" not in got
    row = inst.meta["wmap"][0, 0]  # cat = cat: not negated
    assert not {names[c] for r, c in zip(inst.var_rows, inst.var_cols) if r == row} & {
        "wm|neg_mismatch", "wm|neg_both"}
    inst = task.build(g_not, g_not)
    row = inst.meta["wmap"][3, 3]
    assert "wm|neg_both" in {names[c] for r, c in zip(inst.var_rows, inst.var_cols) if r == row}


@pytest.mark.parametrize("group", ["wordnet", "pos", "ne", "neg", "string", "dep"])
def test_drop_features_removes_exactly_one_group(group):
    """Ablation: `drop_features` removes every feature of its group and nothing else; the
    variables (and so the ILP) are unchanged."""
    from aligners.models.lclr.paraphrase import feature_group
    g_not = SentenceGraph(("Cats", "do", "not", "sit"), ("NNP", "VB", "FW", "VB"),
                          ((0, 3, "S"), (1, 2, "N"), (1, 3, "I")))
    full = make_task("paraphrase", node_info=True)
    cut = make_task("paraphrase", node_info=True, drop_features=[group])
    a, b = full.build(g_not, G_CAT3), cut.build(g_not, G_CAT3)
    kept = {full.features.names[c] for c in a.var_cols}
    assert any(feature_group(n) == group for n in kept)  # the fixture has the group
    assert a.num_vars == b.num_vars
    assert {cut.features.names[c] for c in b.var_cols} == {
        n for n in kept if feature_group(n) != group}
    assert cut.config()["drop_features"] == [group]
    assert feature_group("wm") is None and feature_group("del|1") is None
    assert feature_group("em|node|wn_synonym") == "wordnet"  # NODE-INFO copies go too
    assert feature_group("em|node|neg_both") == "neg"
    if group != "dep":
        assert any(n.startswith("em|node|") and feature_group(n) == group for n in kept)
