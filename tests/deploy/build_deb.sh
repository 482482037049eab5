# Sourced by the deploy tests: build_deb BUILD_DIR OUT_DIR builds the .deb
# with CPack from an already built tree and sets DEB to its path. -B keeps
# the package and CPack's staging tree out of the build directory.
build_deb() {
  local build=$1 out=$2
  cpack -G DEB --config "$build/CPackConfig.cmake" -B "$out" > "$out.cpack.log" 2>&1 ||
    { cat "$out.cpack.log"; find "$out" -name '*.log' -exec tail -40 {} \; ; return 1; }
  local debs=("$out"/gloowatch_*.deb)
  [ -f "${debs[0]}" ] || { cat "$out.cpack.log"; echo "FAIL: no gloowatch_*.deb"; return 1; }
  DEB=${debs[0]}
  echo "built $(basename "$DEB") ($(du -h "$DEB" | cut -f1))"
}
