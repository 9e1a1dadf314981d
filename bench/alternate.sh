# Sourced by the `*_rounds.sh` scripts that time an example against a
# PyTorch script on 1 and on 2 threads.
#
# alternate EXAMPLE SCRIPT ROUNDS OUT: builds examples/EXAMPLE in release,
# then each round runs it and SCRIPT (both with `--threads T`) one after
# the other for T = 1 and 2, writing OUT/blaze.T.R and OUT/torch.T.R.
alternate() {
    local example=$1 script=$2 rounds=$3 out=$4
    cargo build -q --release --example "$example"
    for r in $(seq "$rounds"); do
        for t in 1 2; do
            "target/release/examples/$example" --threads "$t" > "$out/blaze.$t.$r"
            python3 "$script" --threads "$t" 2>/dev/null > "$out/torch.$t.$r"
        done
        echo "round $r of $rounds done" >&2
    done
}
