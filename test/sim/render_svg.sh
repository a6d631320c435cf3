#!/bin/sh
# The SVGs of tl-sim-svg-tests rendered by headless Chromium: each must load as an image of a
# positive size and paint something. One HTML page embeds every file as <img src="data:...">;
# on load, its script draws each image on a white canvas and counts the pixels that are not
# white, and writes one verdict line per image into the page, which --dump-dom prints:
#   VERDICT name SVG-OK width=W height=H painted=N
#   VERDICT name SVG-FAIL error            (the image did not load: not a valid SVG)
#   VERDICT name SVG-FAIL painted=0 ...    (it loaded but painted nothing)
# Two files made here prove the check can fail: a truncated SVG (must give "error") and a
# valid but blank one (must give "painted=0").
#
#   render_svg.sh TESTS [SIM]    TESTS is the tl-sim-svg-tests program; SIM, tl-sim, whose
#                                default run's --svg is rendered with them (tl-sim-default)
#
# Exit status: 0 when every verdict is the expected one; 77 (skipped) when Chromium (Debian
# package chromium) is not installed; 1 otherwise.
set -u
tests=$1
sim=${2:-}
browser=
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then
    browser=$b
    break
  fi
done
if [ -z "$browser" ]; then
  echo "render_svg.sh: chromium not installed (Debian: chromium); skipped"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/svg"
"$tests" "$tmp/svg" >/dev/null || { echo "render_svg.sh: $tests failed" >&2; exit 1; }
if [ -n "$sim" ]; then
  "$sim" --quiet --svg "$tmp/svg/tl-sim-default.svg" >/dev/null ||
    { echo "render_svg.sh: $sim failed" >&2; exit 1; }
fi
size=$(wc -c <"$tmp/svg/spark18553.svg")
head -c $((size / 2)) "$tmp/svg/spark18553.svg" >"$tmp/svg/broken-truncated.svg"
printf '%s\n' '<?xml version="1.0" encoding="UTF-8"?>' \
  '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100"><g/></svg>' \
  >"$tmp/svg/broken-blank.svg"

page=$tmp/page.html
{
  echo '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>'
  for f in "$tmp"/svg/*.svg; do
    name=$(basename "$f" .svg)
    printf '<img alt="%s" src="data:image/svg+xml;base64,' "$name"
    base64 <"$f" | tr -d '\n'
    echo '">'
  done
  cat <<'HTML'
<pre id="verdicts">(no verdict: the page's script did not run)</pre>
<script>
window.addEventListener('load', function () {
  var lines = [];
  Array.prototype.forEach.call(document.images, function (img) {
    var v;
    if (!img.complete || img.naturalWidth === 0 || img.naturalHeight === 0) {
      v = 'SVG-FAIL error';
    } else {
      try {
        var c = document.createElement('canvas');
        c.width = img.naturalWidth;
        c.height = img.naturalHeight;
        var g = c.getContext('2d');
        g.fillStyle = '#ffffff';
        g.fillRect(0, 0, c.width, c.height);
        g.drawImage(img, 0, 0);
        var d = g.getImageData(0, 0, c.width, c.height).data, n = 0;
        for (var i = 0; i < d.length; i += 4)
          if (d[i] < 240 || d[i + 1] < 240 || d[i + 2] < 240)
            n++;
        if (n > 0)
          v = 'SVG-OK width=' + c.width + ' height=' + c.height + ' painted=' + n;
        else
          v = 'SVG-FAIL painted=0 width=' + c.width + ' height=' + c.height;
      } catch (e) {
        v = 'SVG-FAIL exception ' + e;
      }
    }
    lines.push('VERDICT ' + img.alt + ' ' + v);
  });
  document.getElementById('verdicts').textContent = lines.join('\n');
});
</script></body></html>
HTML
} >"$page"

timeout 60 "$browser" --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/profile" \
  --virtual-time-budget=5000 --dump-dom "file://$page" >"$tmp/dom" 2>"$tmp/err"
grep -o 'VERDICT [a-z0-9-]* SVG-[^<]*' "$tmp/dom" >"$tmp/verdicts"
cat "$tmp/verdicts"
status=0
n=0
for f in "$tmp"/svg/*.svg; do
  name=$(basename "$f" .svg)
  v=$(grep "^VERDICT $name " "$tmp/verdicts")
  case $name in
  broken-truncated) want='SVG-FAIL error' ;;
  broken-blank) want='SVG-FAIL painted=0' ;;
  *) want='SVG-OK' ;;
  esac
  case $v in
  "VERDICT $name $want"*) n=$((n + 1)) ;;
  *)
    echo "render_svg.sh: $name: expected $want, got: ${v:-no verdict}" >&2
    status=1
    ;;
  esac
done
if [ "$n" -lt 8 ]; then
  echo "render_svg.sh: only $n verdicts as expected" >&2
  status=1
fi
if [ "$status" -ne 0 ]; then
  echo "--- $browser stderr (last lines)" >&2
  tail -20 "$tmp/err" >&2
fi
exit $status
