# Sourced by the mutation scripts (ringdiff_mutations.sh,
# gpuanalysis_mutations.sh): mutated_copy DIR FILE FROM TO copies the
# tree's tracked files, as they are in the working tree, into DIR and
# replaces FROM, which must occur once in FILE, by TO there. Needs ROOT.
mutated_copy() {
  local dir=$1 file=$2 from=$3 to=$4
  mkdir -p "$dir"
  (cd "$ROOT" && git ls-files -z | tar --null -T - -cf -) | (cd "$dir" && tar -xf -)
  python3 - "$dir/$file" "$from" "$to" <<'PY'
import sys
path, old, new = sys.argv[1], sys.argv[2], sys.argv[3]
s = open(path).read()
if s.count(old) != 1:
    sys.exit(f"{path}: the mutation's text occurs {s.count(old)} times, want once: {old!r}")
open(path, "w").write(s.replace(old, new))
PY
}
