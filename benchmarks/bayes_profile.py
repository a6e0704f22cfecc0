"""Phase profile of the Bayesian aligner: python prof.py SRC TGT [threads]. Run with PYTHONPATH=<code>."""
import sys, time, resource
import numpy as np
T = {}
def tick(name, t0):
    T[name] = T.get(name, 0.0) + time.perf_counter() - t0
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t0 = time.perf_counter()
import aligners.models.bayes.model as M, aligners.models.bayes.corpus as C
from aligners.models.bayes import sampler as K
from aligners.models.bayes.decode import direction_links
from aligners.symmetrize import symmetrize_corpus
tick("import", t0)
t0 = time.perf_counter()
pairs = [(s.split(), t.split()) for s, t in zip(open(sys.argv[1]), open(sys.argv[2]))]
tick("read", t0)
# wrap phases
orig_union = np.union1d
def union(a, b):
    t = time.perf_counter(); r = orig_union(a, b); tick("enc.union1d", t); return r
C.np.union1d = union
orig_ss = np.searchsorted
orig_enc = M.encode_bitext
def enc(*a):
    t = time.perf_counter(); c = orig_enc(*a); tick("encode(total)", t)
    print(f"cells={c.cell_off[-1]} P={len(c.keys)} src={len(c.src)} tgt={len(c.tgt)}", flush=True)
    return c
M.encode_bitext = enc
orig_sweep = K.sweep
def sweep(*a):
    t = time.perf_counter(); orig_sweep(*a); st = a[21]; acc = a[20]
    tick(f"sweep stage{st}{' acc' if acc else ''}", t)
    T[f"n stage{st}{' acc' if acc else ''}"] = T.get(f"n stage{st}{' acc' if acc else ''}", 0) + 1
M._k.sweep = sweep
orig_add = K.add_counts
def add(*a):
    t = time.perf_counter(); orig_add(*a); tick("add_counts", t)
M._k.add_counts = add
m = M.BayesAligner(M.BayesConfig(threads=int(sys.argv[3]) if len(sys.argv) > 3 else 1))
t0 = time.perf_counter()
marg = m.align(pairs, seed=0)
tick("align(total)", t0)
t0 = time.perf_counter(); f = direction_links(marg, "fwd"); r = direction_links(marg, "rev"); tick("decode argmax+py", t0)
t0 = time.perf_counter(); s = symmetrize_corpus(f, r, "grow-diag-final-and"); tick("symmetrize gdfa", t0)
t0 = time.perf_counter()
lines = [" ".join(f"{i}-{j}" for i, j in sorted(ls)) for ls in s]; tick("format lines", t0)
print("schedule", marg.schedule, "maxrss MB", round(rss()))
for k, v in T.items():
    print(f"{k:<24} {v:9.2f}")
