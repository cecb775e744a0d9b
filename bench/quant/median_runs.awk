# median_runs.awk: the per-cell median of several bench_dot outputs.
#   awk -f bench/quant/median_runs.awk run1.txt run2.txt run3.txt
# Table lines ("type n | 4 ns | 4 GB/s | ratio") are keyed by type and n;
# each number becomes the median over the files ("-" stays "-"); the
# ratio is recomputed as ggml ns over q36's best vector path (else ref).
function med(key, j,    k, m, v, i, t) {
    m = cnt[key]
    for (i = 1; i <= m; i++) v[i] = val[key, j, i]
    for (i = 2; i <= m; i++) { t = v[i]; k = i - 1; while (k > 0 && v[k] > t) { v[k + 1] = v[k]; k-- } v[k + 1] = t }
    return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
}
/^[A-Za-z0-9_]+ +[0-9]+ \|/ && NF == 14 {
    key = $1 " " $2
    if (!(key in cnt)) { order[++nk] = key; cnt[key] = 0 }
    c = ++cnt[key]
    cols[1] = 4; cols[2] = 5; cols[3] = 6; cols[4] = 7
    for (j = 1; j <= 4; j++) { dash[key, j] = ($(cols[j]) == "-"); val[key, j, c] = $(cols[j]) + 0 }
    rb[key, c] = ($4 == "-" ? ($5 == "-" ? $6 * $11 : $5 * $10) : $4 * $9)   # bytes per row
    next
}
/^type / && !hdr { print; hdr = 1 }
END {
    for (q = 1; q <= nk; q++) {
        key = order[q]; split(key, kn, " ")
        bytes = 0; for (i = 1; i <= cnt[key]; i++) bytes += rb[key, i]; bytes /= cnt[key]
        line = sprintf("%-8s %6s |", kn[1], kn[2]); best = 0
        for (j = 1; j <= 4; j++) { ns[j] = dash[key, j] ? -1 : med(key, j); line = line (ns[j] < 0 ? sprintf(" %8s", "-") : sprintf(" %8.0f", ns[j])) }
        line = line " |"
        for (j = 1; j <= 4; j++) line = line (ns[j] < 0 ? sprintf(" %7s", "-") : sprintf(" %7.2f", bytes / ns[j]))
        for (j = 2; j <= 3; j++) if (ns[j] > 0 && (best == 0 || ns[j] < best)) best = ns[j]
        if (best == 0) best = ns[1]
        printf "%s | %6.2f\n", line, ns[4] / best
    }
}
