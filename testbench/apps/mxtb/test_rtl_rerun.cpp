// The rerun line `mxtb` prints when an RTL assertion stops a run.
#include <doctest/doctest.h>

#include "apps/mxtb/rtl_rerun.h"

using mxtb::app::rtl_assert_rerun;

TEST_CASE("rtl assertion rerun: link-pair gets a waveform window ending at the failing cycle") {
  CHECK(rtl_assert_rerun("link-pair", {"--random", "17"}, 5000) ==
        "./mxtb link-pair --random 17 --fst rtl-assert.fst --fst-from 3000 --fst-to 5001");
  // An early failure: the window starts at 0; the run's own waveform options are replaced.
  CHECK(rtl_assert_rerun("link-pair", {"--scenario", "a b.json", "--fst", "x.fst", "--fst-from", "9"}, 100) ==
        "./mxtb link-pair --scenario 'a b.json' --fst rtl-assert.fst --fst-from 0 --fst-to 101");
}

TEST_CASE("rtl assertion rerun: the emulator gets the traced models, other commands their own line") {
  CHECK(rtl_assert_rerun("sim", {"--seed", "3"}, 42) == "./mxtb sim --seed 3 --fst rtl-assert.fst");
  CHECK(rtl_assert_rerun("regress", {"--seeds", "5"}, 42) == "./mxtb regress --seeds 5");
  CHECK(rtl_assert_rerun("demo", {"--scenario", "it's.json"}, 1) == "./mxtb demo --scenario 'it'\\''s.json'");
}
