#!/usr/bin/env bash
# archconds.sh [TREE]: counts the if and switch statements that decide on an
# architecture or an instruction mode outside decode/ and the per-arch files
# (issue 13: such a decision belongs to decode or to one arch's definitions).
#
# Scanned: non-test, non-generated .go files of TREE (default: the repository
# this script is in), except decode/ and its subpackages, testdata/, and files
# named x86_*, a64_* or a32_*.
#
# A site is
#   - an `if` / `else if` whose condition compares with (==, !=) an arch or
#     mode value, tests PtrSize, tests an ISA's Thumb flag or reads GOARCH;
#   - a `switch` (counted once, at its line) with a case naming an arch or mode
#     value, or whose tag is one (`switch decode.ARM64`... rarely) or GOARCH.
# Arch or mode values: decode.Mode64/Mode32/ModeA64/ModeA32/ModeT32,
# decode.X86_64/I386/ARM64/ARM/Thumb, opcodes.ArmA64/ArmA32/ArmT32, the
# strings "x86-64" "x86_64" "x86" "i386" "i686" "386" "amd64" "arm64"
# "aarch64" "arm" "armhf" "armel" "thumb" "a64" "a32" "t32".
# Heuristic, line-based: a condition split over lines is seen on its first
# line only; braces inside strings and comments are stripped before nesting is
# tracked.
#
# Output: one line per site (file:line: statement), then the count per
# package and the total.
set -euo pipefail
tree=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$tree"

find . -name '*.go' -not -name '*_test.go' -not -path './decode/*' \
	-not -path '*/testdata/*' -not -path './.git/*' |
	sed 's#^\./##' | sort |
	while read -r f; do
		case ${f##*/} in x86_* | a64_* | a32_*) continue ;; esac
		head -n 5 "$f" | grep -q '^// Code generated .* DO NOT EDIT\.$' && continue
		printf '%s\n' "$f"
	done |
	ARCHVAL='(decode\.(Mode(64|32|A64|A32|T32)|X86_64|I386|ARM64|ARM|Thumb)|opcodes\.Arm(A64|A32|T32)|"(x86-64|x86_64|x86|i386|i686|386|amd64|arm64|aarch64|arm|armhf|armel|thumb|a64|a32|t32)")' \
	xargs awk '
	BEGIN { V = ENVIRON["ARCHVAL"] }
	FNR == 1 { depth = 0; nsw = 0 }
	{
		line = $0
		# Strip comments and string/rune literals for brace counting, keep
		# the string contents for matching arch names.
		code = line
		gsub(/"([^"\\]|\\.)*"/, "\"\"", code)
		gsub(/`[^`]*`/, "\"\"", code)
		gsub(/\047([^\047\\]|\\.)*\047/, "0", code)
		sub(/\/\/.*/, "", code)
		stmt = line
		sub(/\/\/.*/, "", stmt)
		# cmp: an arch or mode value next to == or !=; item: one as a case item.
		cmp = stmt ~ ("(==|!=)[ \t]*" V "([^A-Za-z0-9_]|$)") || stmt ~ (V "[ \t]*(==|!=)")
		item = stmt ~ ("^[ \t]*case[ \t]+([^:]*,[ \t]*)?" V "[ \t]*(,|:)")
		val = cmp || item
		isIf = stmt ~ /^[ \t]*(if|\}[ \t]*else[ \t]+if)[ \t]/
		isSwitch = stmt ~ /^[ \t]*switch([ \t]|\{)/
		isCase = stmt ~ /^[ \t]*case[ \t]/
		if (isIf) {
			if (cmp || stmt ~ /PtrSize(\(\))?[ \t]*(==|!=|<|>)/ ||
				stmt ~ /\.Thumb([^A-Za-z0-9_(]|$)/ || stmt ~ /GOARCH/)
				site(FILENAME, FNR, stmt)
		}
		if (isCase && nsw > 0 && val && !swDone[nsw]) {
			site(FILENAME, swLine[nsw], swText[nsw])
			swDone[nsw] = 1
		}
		opens = gsub(/\{/, "{", code)
		closes = gsub(/\}/, "}", code)
		if (isSwitch) {
			nsw++
			swDepth[nsw] = depth
			swLine[nsw] = FNR
			swText[nsw] = stmt
			swDone[nsw] = 0
			if (stmt ~ ("^[ \t]*switch[ \t]+" V "[ \t]*\\{") || stmt ~ /GOARCH/) {
				site(FILENAME, FNR, stmt)
				swDone[nsw] = 1
			}
		}
		depth += opens - closes
		while (nsw > 0 && depth <= swDepth[nsw])
			nsw--
	}
	function site(f, n, s) {
		gsub(/^[ \t]+|[ \t]+$/, "", s)
		printf "%s:%d: %s\n", f, n, s
		p = f
		sub(/\/[^\/]*$/, "", p)
		if (p == f) p = "."
		per[p]++
		total++
	}
	END {
		print ""
		for (p in per) printf "%5d %s\n", per[p], p | "sort -k2"
		close("sort -k2")
		printf "%5d total\n", total
	}'
