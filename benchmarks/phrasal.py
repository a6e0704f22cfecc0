"""Time the phrasal/gappy HSMM aligner against the word HMM side by side.

Lattice mode (default): same B, I, J, float32, one thread; the phrasal lattice adds L-word
target segments and P phrase states. Prints the median seconds of posteriors (forward +
backward) of each and the ratio. `python benchmarks/phrasal.py --repeats 5`
Corpus mode (`--pairs N`): the first N Hansards training pairs (lowercased); after Model 1 +
word HMM training (no agreement) and building the phrasal model, times one full EM
iteration (E-step over all batches + M-step) of the word HMM by agreement and of the
phrasal + gappy model by agreement, `--repeats` times each, interleaved: the phrasal model's
first iteration (which prepares every batch's fixed parts: layout, routing, slots,
transitions) and a later one (prepared batches reused), both from the same state; also the
time of
building the phrasal model (mining + initialisation) and the share of pairs with a phrase
state (the others run the word HMM lattice). `--unrouted` also times the phrasal iteration
with every pair on the phrasal lattice (the path before issue 10), interleaved.
`python benchmarks/phrasal.py --pairs 5000 --repeats 3`
Stage mode (`--stages N`, 0 = all 200k pairs): the phrasal pipeline of `train.py
experiment=bansal2011_hansards` (its model config; training text = the first N Hansards
pairs + the test and trial text, lowercased), stage by stage without Lightning: word HMM by
agreement (the baseline), word HMM without agreement, the mining Viterbi, building the gappy
model (mining + initialisation), its first EM iteration (prepares every batch) and the
other iterations; CPU seconds per stage and pipeline / baseline. `--profile DIR` writes one
cProfile file per stage (process-time clock). `python benchmarks/phrasal.py --stages 20000`
"""

import argparse
import statistics
import time

import torch

from aligners.lattices.alignment_hmm import alignment_hmm_posteriors
from aligners.lattices.phrasal_hsmm import PhrasalPotentials, phrasal_hsmm_posteriors


def corpus_mode(a) -> None:
    import itertools

    from aligners.data.bitext import build_index
    from aligners.data.datasets import iter_parallel
    from aligners.data.vocab import WordIds
    from aligners.models.phrasal import PhrasalConfig, build_phrasal_aligner, make_layout
    from aligners.models.phrasal.decode import fit_phrasal
    from aligners.models.phrasal.routing import phrase_rows
    from aligners.models.word.agreement import WordAlignConfig, WordAligner

    pairs = itertools.islice(iter_parallel("hansards-enfr", "train", lowercase=True), a.pairs)
    index = build_index(pairs, WordIds(), WordIds())
    word = WordAligner.from_index(index, WordAlignConfig(agreement=False))
    word.fit(index)
    agree = WordAligner.from_index(index, WordAlignConfig(agreement=True))
    agree.load_state_dict(word.state_dict())
    t0, c0 = time.perf_counter(), time.process_time()
    model, stats = build_phrasal_aligner(word, index, PhrasalConfig(iterations=0))
    build_s, build_cpu = time.perf_counter() - t0, time.process_time() - c0
    rows = sum(int(phrase_rows(make_layout(index.batch(k), model.src_list, model.tgt_list,
                                           gappy=True)).sum()) for k in range(len(index)))
    times = {"word_hmm_agreement": [], "phrasal_gappy_first": [], "phrasal_gappy": []}
    if a.unrouted:
        times["phrasal_gappy_unrouted"] = []
    cpu = {k: [] for k in times}  # process CPU seconds (the fairer figure on a busy machine)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    b0 = index.batch(0)  # warm-up: loads the compiled lattice kernel before timing
    model.link_posteriors(b0, make_layout(b0, model.src_list, model.tgt_list, gappy=True),
                          route=False)
    for _ in range(a.repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        for k in range(len(index)):
            agree.accumulate(index.batch(k), stage="hmm")
        agree.m_step(stage="hmm")
        times["word_hmm_agreement"].append(time.perf_counter() - t0)
        cpu["word_hmm_agreement"].append(time.process_time() - c0)
        cache = {}  # prepared batches: filled by the first iteration, reused by the second
        for key, route in (("phrasal_gappy_first", True), ("phrasal_gappy", True),
                           ("phrasal_gappy_unrouted", False)):
            if key not in times:
                continue
            model.load_state_dict(state)  # every repeat times the same first iteration
            model.iteration.zero_()
            model.config.iterations = 1
            t0, c0 = time.perf_counter(), time.process_time()
            fit_phrasal(model, index, route=route, prepared=cache if route else {})
            times[key].append(time.perf_counter() - t0)
            cpu[key].append(time.process_time() - c0)
    med = {k: statistics.median(v) for k, v in times.items()}
    mc = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"pairs={index.n_sentences} batches={len(index)} threads={a.threads} "
          f"repeats={a.repeats} phrases matched/pair={stats['mean_phrases_matched']:.2f} "
          f"pairs with a phrase state={rows} ({rows / max(1, index.n_sentences):.1%}) "
          f"build (mining + init) {build_s:.1f} s wall, {build_cpu:.1f} s CPU")
    for k, v in med.items():
        print(f"{k:<24} {v:8.2f} s wall, {mc[k]:8.2f} s CPU per EM iteration")
    for k in [x for x in med if x != "word_hmm_agreement"]:
        print(f"ratio {k}/word: wall {med[k] / med['word_hmm_agreement']:.2f}, "
              f"CPU {mc[k] / mc['word_hmm_agreement']:.2f}")


def stages_mode(a) -> None:
    import cProfile
    import itertools

    from omegaconf import OmegaConf

    from aligners.data.bitext import build_index
    from aligners.data.datasets import iter_parallel, load
    from aligners.data.vocab import WordIds
    from aligners.models.phrasal import PhrasalConfig, build_phrasal_aligner
    from aligners.models.phrasal.decode import fit_phrasal
    from aligners.models.phrasal.init import word_viterbi
    from aligners.models.word.agreement import WordAlignConfig, WordAligner
    from aligners.training.phrasal_align import _warm_up_kernels, start_config

    m = OmegaConf.load("configs/model/phrasal_hsmm.yaml")
    extra = [(tuple(w.lower() for w in p.src), tuple(w.lower() for w in p.tgt))
             for split in ("test", "trial") for p in load("hansards-enfr", split)]

    def stream():
        it = iter_parallel("hansards-enfr", "train", lowercase=True)
        yield from (itertools.islice(it, a.stages) if a.stages > 0 else it)
        for s, t in extra:
            yield list(s), list(t)

    index = build_index(stream(), WordIds(), WordIds(), cells=int(m.batch_cells))
    print(f"pairs={index.n_sentences} batches={len(index)}", flush=True)
    wcfg = {k: m.word[k] for k in m.word}
    pcfg = {k: v for k, v in OmegaConf.to_container(m.phrasal).items()
            if k in PhrasalConfig.__dataclass_fields__}
    cpu = {}
    _warm_up_kernels()

    def stage(name, f):
        prof = cProfile.Profile(time.process_time) if a.profile else None
        c0 = time.process_time()
        if prof:
            prof.enable()
        out = f()
        if prof:
            prof.disable()
            prof.dump_stats(f"{a.profile}/{name}.prof")
        cpu[name] = time.process_time() - c0
        print(f"{name:<22} {cpu[name]:8.2f} s CPU", flush=True)
        return out

    stage("word_hmm_agreement", lambda: WordAligner.from_index(
        index, WordAlignConfig(**{**wcfg, "agreement": True})).fit(index))
    word = WordAligner.from_index(index, start_config(m))
    stage("word_hmm_no_agreement", lambda: word.fit(index))
    vit = stage("mining_viterbi", lambda: word_viterbi(word, index))
    layouts = []  # handed from the build to the first iteration (as train.py does)
    model, _ = stage("build_gappy", lambda: build_phrasal_aligner(
        word, index, PhrasalConfig(**{**pcfg, "gappy": True}), vit=vit, layouts=layouts))
    prepared, iters = {}, model.config.iterations
    model.config.iterations = 1
    stage("gappy_iteration_1", lambda: fit_phrasal(model, index, prepared=prepared,
                                                   layouts=layouts))
    model.config.iterations = iters
    stage("gappy_later_iterations", lambda: fit_phrasal(model, index, prepared=prepared))
    pipe = sum(v for k, v in cpu.items() if k != "word_hmm_agreement")
    print(f"pipeline (no-agreement HMM + gappy model) {pipe:.2f} s CPU = "
          f"{pipe / cpu['word_hmm_agreement']:.2f}x the word HMM by agreement")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--length", type=int, default=30)
    ap.add_argument("--segment", type=int, default=5)
    ap.add_argument("--phrases", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--pairs", type=int, default=0, help="corpus mode: Hansards pairs")
    ap.add_argument("--unrouted", action="store_true",
                    help="corpus mode: also time every pair on the phrasal lattice")
    ap.add_argument("--stages", type=int, default=None,
                    help="stage mode: Hansards pairs (0 = all) + test and trial text")
    ap.add_argument("--profile", default=None, help="stage mode: cProfile folder")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.stages is not None:
        return stages_mode(a)
    if a.pairs:
        return corpus_mode(a)
    g = torch.Generator().manual_seed(0)
    B, I, J, L, P = a.batch, a.length, a.length, a.segment, a.phrases
    sl = torch.full((B,), I)
    tl = torch.full((B,), J)
    link = torch.rand(B, I, J, generator=g)
    null = torch.rand(B, J, generator=g)
    jumps = torch.rand(I + 1, I, generator=g)
    first = torch.randint(0, I - 2, (B, P), generator=g)
    pot = PhrasalPotentials(torch.randn(B, J, L, I, generator=g), torch.randn(B, J, generator=g),
                            torch.randn(B, J, P, generator=g), torch.randn(B, I, generator=g),
                            torch.randn(B, I, I, generator=g), torch.randn(B, I, generator=g),
                            torch.randn(B, I, generator=g), torch.randn(B, P, generator=g),
                            first, first + 2)
    times = {"word_hmm": [], "phrasal_hsmm": []}
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        alignment_hmm_posteriors(link, null, jumps, src_lengths=sl, tgt_lengths=tl, p0=0.2)
        times["word_hmm"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        phrasal_hsmm_posteriors(pot, src_lengths=sl, tgt_lengths=tl)
        times["phrasal_hsmm"].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"B={B} I=J={I} L={L} P={P} threads={a.threads} repeats={a.repeats}")
    for k, v in med.items():
        print(f"{k:<14} {v * 1000:9.1f} ms")
    print(f"ratio phrasal/word {med['phrasal_hsmm'] / med['word_hmm']:.2f}")


if __name__ == "__main__":
    main()
