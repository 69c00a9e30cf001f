# shellcheck shell=bash
# tests/bench/accuracy/floor_table.sh - sourced (bash) by the accuracy
# benchmarks that judge a prediction against several real runs of the same
# load (apps/app-bench.sh, matrix.sh): defines floor_table and nothing
# else. Writes only under the directory it is given; never edits a real
# run's CSV or a prediction.
#
# floor_table BIN DIR TYPE RATE TAG TITLE PRED REAL...: the noise floor,
#   each real run against the others pooled (compare.py: DIR/floor.md,
#   DIR/floorK.json; a floorK.json already there is kept when TAG is not
#   empty, so predictions tagged apart share one floor), then PRED (the
#   prediction's results JSON) against all real runs pooled with the floor
#   beside each error and the goal's verdict per label:
#   DIR/tableTAG.md (TITLE, then the table) and DIR/compareTAG.json.
#   Status 1, with the reason on stderr, when compare.py fails.
floor_table_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

floor_table() {
    local bin=$1 d=$2 type=$3 rate=$4 tag=$5 title=$6 pred=$7 k j hdr others floors=()
    shift 7
    local reals=("$@") n=$#
    # CSVs pooled: one header
    awk 'FNR > 1 || NR == 1' "${reals[@]}" >"$d/real-all.csv"
    for ((k = 1; k <= n; k++)); do
        others=()
        for ((j = 1; j <= n; j++)); do [ $j -ne $k ] && others+=("${reals[j - 1]}"); done
        awk 'FNR > 1 || NR == 1' "${others[@]}" >"$d/real-not$k.csv"
        [ -n "$tag" ] && [ -s "$d/floor$k.json" ] && { floors+=("$d/floor$k.json"); continue; }
        hdr=()
        [ $k -eq 1 ] && { hdr=(--header); : >"$d/floor.md"; }
        python3 "$floor_table_here/compare.py" --preplay "$bin" --real "$d/real-not$k.csv" \
            --pred "${reals[k - 1]}" --type "$type" --level "$rate/s (real $k vs other real)" \
            --json "$d/floor$k.json" "${hdr[@]}" >>"$d/floor.md" ||
            { echo "floor_table: compare.py: the noise floor of real run $k" >&2; return 1; }
        floors+=("$d/floor$k.json")
    done
    echo "$title" >"$d/table$tag.md"
    python3 "$floor_table_here/compare.py" --preplay "$bin" --real "$d/real-all.csv" --pred "$pred" \
        --type "$type" --level "$rate/s (pred$tag vs $n real pooled)" --json "$d/compare$tag.json" \
        --header --floor "${floors[@]}" >>"$d/table$tag.md" ||
        { echo "floor_table: compare.py: the prediction's table" >&2; return 1; }
}
