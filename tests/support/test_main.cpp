// test_main — the main() of every sandboxd_test binary (BOOST_TEST_NO_MAIN is defined for
// them): Boost.Test's own runner, plus an exit code ctest understands for a binary that
// could not run here.
//
// A test case that cannot run (no root, no runtime, no tool) declares a precondition
// (`* boost::unit_test::precondition(fn)`) whose message says why. When every test case of
// the binary was skipped that way and none ran, the binary exits 77, which sandboxd_test
// registers as ctest's SKIP_RETURN_CODE: ctest reports it Skipped, never Passed. Each skip
// is printed as one line "sandboxd-test: skipped <test>: <reason>", and their number of test
// cases as "sandboxd-test: <n> test cases skipped", which scripts/test collects into its
// summary.
//
// A disabled test unit is not a skip: `* disabled()` marks the entry point of a child process
// (run by name with --run_test), and --run_test leaves out the units it does not name.
#include <boost/test/tree/observer.hpp>
#include <boost/test/tree/test_case_counter.hpp>
#include <boost/test/tree/traverse.hpp>
#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <string>
#include <vector>

bool init_unit_test(); // defined by BOOST_TEST_MODULE in the test's own source

namespace {

constexpr int k_skip_return_code = 77;

class skip_observer : public boost::unit_test::test_observer {
public:
  void test_unit_start(const boost::unit_test::test_unit& tu) override {
    if (tu.p_type == boost::unit_test::TUT_CASE)
      ++started_;
  }
  void test_unit_skipped(const boost::unit_test::test_unit& tu,
                         boost::unit_test::const_string reason) override {
    if (!tu.is_enabled())
      return; // disabled by design or left out by --run_test: nothing that could not run
    boost::unit_test::test_case_counter count;
    boost::unit_test::traverse_test_tree(tu, count, true);
    skipped_ += count.p_count;
    lines_.push_back("sandboxd-test: skipped " + tu.full_name() + ": " +
                     std::string(reason.begin(), reason.end()));
  }

  unsigned started() const { return started_; }
  unsigned skipped() const { return skipped_; }
  const std::vector<std::string>& lines() const { return lines_; }

private:
  unsigned started_ = 0;
  unsigned skipped_ = 0;
  std::vector<std::string> lines_;
};

skip_observer observer;

bool init_with_observer() {
  boost::unit_test::framework::register_observer(observer);
  return init_unit_test();
}

} // namespace

int main(int argc, char* argv[]) {
  const int rc = boost::unit_test::unit_test_main(&init_with_observer, argc, argv);
  for (const auto& line : observer.lines())
    std::printf("%s\n", line.c_str());
  if (observer.skipped() > 0)
    std::printf("sandboxd-test: %u test cases skipped\n", observer.skipped());
  if (rc == 0 && observer.started() == 0 && observer.skipped() > 0) {
    std::printf("sandboxd-test: all %u test cases skipped\n", observer.skipped());
    return k_skip_return_code;
  }
  return rc;
}
