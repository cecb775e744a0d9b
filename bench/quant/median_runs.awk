# median_runs.awk: the per-cell median of several bench_dot outputs.
#   awk -f bench/quant/median_runs.awk run1.txt run2.txt run3.txt
# Table lines ("type n | m ns | m GB/s | ratio", m methods: the q36 paths
# then ggml) are keyed by type and n; each number becomes the median over
# the files ("-" stays "-"); GB/s and the ratio (ggml ns over the best
# vector path's ns, else ref's) are recomputed from the medians.
function med(key, j,    k, m, v, i, t) {
    m = cnt[key]
    for (i = 1; i <= m; i++) v[i] = val[key, j, i]
    for (i = 2; i <= m; i++) { t = v[i]; k = i - 1; while (k > 0 && v[k] > t) { v[k + 1] = v[k]; k-- } v[k + 1] = t }
    return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
}
/^[A-Za-z0-9_]+ +[0-9]+ \|/ && NF >= 10 && (NF - 6) % 2 == 0 {
    M = (NF - 6) / 2
    key = $1 " " $2
    if (!(key in cnt)) { order[++nk] = key; cnt[key] = 0 }
    c = ++cnt[key]
    for (j = 1; j <= M; j++) {
        dash[key, j] = ($(3 + j) == "-")
        val[key, j, c] = $(3 + j) + 0
        if (!dash[key, j]) rb[key] = $(3 + j) * $(4 + M + j)        # bytes per row
    }
    next
}
/^type / && !hdr { print; hdr = 1; next }
/^ +\|/ && !hdr2 { print; hdr2 = 1 }
END {
    for (q = 1; q <= nk; q++) {
        key = order[q]; split(key, kn, " ")
        line = sprintf("%-8s %6s |", kn[1], kn[2]); best = 0
        for (j = 1; j <= M; j++) { ns[j] = dash[key, j] ? -1 : med(key, j); line = line (ns[j] < 0 ? sprintf(" %10s", "-") : sprintf(" %10.0f", ns[j])) }
        line = line " |"
        for (j = 1; j <= M; j++) line = line (ns[j] < 0 ? sprintf(" %10s", "-") : sprintf(" %10.2f", rb[key] / ns[j]))
        for (j = 2; j < M; j++) if (ns[j] > 0 && (best == 0 || ns[j] < best)) best = ns[j]
        if (best == 0) best = ns[1]
        printf "%s | %8.2f\n", line, ns[M] / best
    }
}
