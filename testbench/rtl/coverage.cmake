# The directed testbenches own models: in a coverage build they write their counters.
target_link_libraries(rtl_tests PRIVATE mxtb_rtl_coverage)
target_link_libraries(rtl_ocs_tests PRIVATE mxtb_rtl_coverage)

# The controller's directed testbench on the coverage variant of the shrunk model
# (rtl/models.cmake); the default-parameter smoke test in it runs the ordinary model.
add_executable(rtl_ocs_tests_cov ${MXTB_DOCTEST_MAIN} test_ocs_controller.cpp)
target_link_libraries(rtl_ocs_tests_cov PRIVATE mxtb_rtl_ocs mxtb_rtl_ocs_small_cov mxtb_rtl_coverage_on mxtb_defs
  doctest::doctest)
target_include_directories(rtl_ocs_tests_cov PRIVATE ${CMAKE_SOURCE_DIR})
mxtb_warnings(rtl_ocs_tests_cov)

# The coverage flow end to end on it: run, merge, lcov data, HTML report, summary; fails if the
# testbench fails, nothing was written or line coverage of the RTL is below half.
mxtb_test(NAME coverage_smoke LABELS coverage TIMEOUT 120
  COMMAND mxtb cover --build ${CMAKE_BINARY_DIR} --no-build --tests testbench/rtl/rtl_ocs_tests_cov --seeds 0
          --out ${CMAKE_CURRENT_BINARY_DIR}/cover-smoke --min-line 50)
