# Summarises an ncu --csv (gpu__time_duration.sum) of fbprof: the last pass's kernels grouped by
# (block, grid) signature, in first-seen order, with calls, total and mean microseconds.
import csv, lzma, sys
path = sys.argv[1]; per_pass = int(sys.argv[2]) if len(sys.argv) > 2 else 303
op = lzma.open if path.endswith('.xz') else open
with op(path, 'rt') as f:
    lines = [l for l in f if l.startswith('"')]
rows = list(csv.DictReader(lines))
rows = [r for r in rows if r.get('Metric Name') == 'gpu__time_duration.sum']
last = rows[-per_pass:]
groups = {}
order = []
for i, r in enumerate(last):
    key = (r['Block Size'], r['Grid Size'])
    if key not in groups:
        groups[key] = [0, 0.0, i]
        order.append(key)
    g = groups[key]; g[0] += 1; g[1] += float(r['Metric Value'].replace(',', '')) / 1e3
total = sum(g[1] for g in groups.values())
print(f"{len(rows)} kernels in file; last {len(last)}: {total:.1f} us")
for key in order:
    n, us, first = groups[key]
    print(f"  first@{first:4d} block {key[0]:>14} grid {key[1]:>16}: {n:4d} calls {us:8.1f} us  mean {us/n:6.2f}")
