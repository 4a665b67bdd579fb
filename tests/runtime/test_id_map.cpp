// id_map: user namespaces made from many threads at once all come back, each a user
// namespace. The helper child that holds a namespace while its maps are written never
// execs; one that kept the descriptors it inherited held the file log's lock after the
// node died, and two made by different threads could each hold the other's pipe open and
// wait for it forever.
#define BOOST_TEST_MODULE id_map
#include <boost/test/unit_test.hpp>

#include "runtime/id_map.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace rt = sandboxd::runtime;

namespace {

boost::test_tools::assertion_result as_root(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(::geteuid() == 0);
  if (!r)
    r.message() << "writing another range's uid_map needs root";
  return r;
}

std::string link_of(int fd) {
  char buf[128] = {};
  const std::string p = "/proc/self/fd/" + std::to_string(fd);
  const auto n = ::readlink(p.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

} // namespace

BOOST_AUTO_TEST_CASE(namespaces_made_from_many_threads_all_come_back,
                     *boost::unit_test::precondition(as_root)) {
  constexpr int threads = 8, each = 150;
  std::atomic<int> done{0}, not_userns{0}, errors{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int i = 0; i < each; ++i) {
        try {
          auto ns = rt::make_userns(rt::id_range{static_cast<std::uint32_t>(65536u * (100 + t))});
          if (link_of(ns.get()).rfind("user:[", 0) != 0)
            ++not_userns;
        } catch (const std::exception&) {
          ++errors;
        }
        ++done;
      }
    });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (done.load() < threads * each && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (done.load() < threads * each) {
    // The stuck threads cannot be joined; say so and end here.
    std::fprintf(stderr,
                 "id_map: %d of %d namespaces came back within 60 s: helper children "
                 "are waiting for each other\n",
                 done.load(), threads * each);
    std::fflush(stderr);
    ::_exit(1);
  }
  for (auto& w : workers)
    w.join();
  BOOST_TEST(errors.load() == 0);
  BOOST_TEST(not_userns.load() == 0);
}
