// template_bench — what templates cost a user, against a sandboxd of its own (a process on a
// fresh data directory: crun and runsc, embedded log and PostgreSQL, the stock tarballs cached
// where sandboxd keeps them, ~/.cache/sandboxd/templates):
//   stock_build_s          `template build python` on the fresh node: mmdebstrap, or the cached
//                          tarball when one is there (stock_build_cached says which);
//   import_mib_per_s       a 200 MiB root filesystem tarball (plain tar, some 7,000 files and
//                          symlinks in 430 directories, sizes spread like a Debian tree's) through
//                          `sandboxctl template import`, as a user imports it, until the template
//                          is ready (unpacked, digested, synced, named); best of --import-rounds;
//   tar_extract_mib_per_s  the reference, same run, rounds interleaved: `tar -xf` of the same
//                          archive into a btrfs pool made as sandboxd makes its layer pools
//                          (runtime/layer_pool: a loop-mounted image on the data directory's
//                          filesystem), not synced; tar_extract_sync_mib_per_s adds a syncfs,
//                          tar_extract_host_mib_per_s is tar -xf onto the data directory's own
//                          filesystem; target: import_vs_tar >= 0.5;
//   create_p50_ms          a create until the sandbox runs, from `base` and from `python`, on
//                          crun and on runsc (rounds interleaved; each sandbox deleted after);
//                          python_vs_base per runtime and the larger of the two (target <= 1.2:
//                          layers are shared, never copied);
//   disk_kib_per_sandbox   what a fresh `python` sandbox adds to the disk, the larger of the two
//                          runtimes': its runtime's layer pool (a btrfs of its own: the used space
//                          once deleted layers are cleaned and synced, before and after
//                          --disk-sandboxes creates) plus the blocks of the runtime's directory on
//                          the host filesystem (bundle, state), per sandbox (target <= 1,024).
// Usage: template_bench [--json] [--rounds N] [--import-rounds N] [--import-mib N]
//                       [--disk-sandboxes N]
#include "api/client.hpp"
#include "runtime/data_entry.hpp"
#include "runtime/layer_pool.hpp"
#include "tests/support/build_tree.hpp"
#include "tests/support/guardian.hpp"
#include "tests/support/node_cleanup.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <linux/magic.h>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using steady = std::chrono::steady_clock;
using namespace sandboxd;
namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

std::string load_average() {
  auto l = read_text("/proc/loadavg");
  std::istringstream in(l);
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "template_bench: %s\n", why.c_str());
  std::fflush(stderr);
  std::exit(1);
}

// Runs argv (argv[0] a path) with `env` added, stdout and stderr into `log`; its exit code.
int run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
        const std::string& log) {
  const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  std::vector<char*> a;
  for (const auto& s : argv)
    a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e)
    envs.emplace_back(*e);
  envs.insert(envs.end(), env.begin(), env.end());
  std::vector<char*> ep;
  for (auto& s : envs)
    ep.push_back(s.data());
  ep.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execve(a[0], a.data(), ep.data());
    ::_exit(127);
  }
  ::close(out);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// sandboxd on a fresh data directory (DIR/data) until destroyed: SIGTERM, then the cleanup a
// guardian also runs if this process dies first (node_cleanup.hpp).
class daemon_process {
public:
  explicit daemon_process(test::temp_dir& dir) : dir_(dir.path()), data_(dir.path() + "/data") {
    ::chmod(dir_.c_str(), 0711); // the embedded PostgreSQL's user traverses it
    std::vector<std::string> entries;
    for (const char* sub : {"/data", "/data/runtimes/crun", "/data/runtimes/runsc"})
      entries.push_back(runtime::entry_path(dir_ + sub, "/run/sandboxd"));
    const std::string sandboxd = test::built_program("apps/sandboxd");
    pid_ = test::spawn_logged({sandboxd, "--data-dir", data_, "--runtime", "runsc,crun"},
                              dir_ + "/sandboxd.log");
    guardian_ =
      std::make_unique<test::guardian>("kill -9 " + std::to_string(pid_) + " 2>/dev/null; " +
                                       test::node_cleanup_command(dir.release(), entries));
    const auto until = steady::now() + std::chrono::minutes(3);
    while (read_text(dir_ + "/sandboxd.log").find("sandboxd ready") == std::string::npos) {
      if (steady::now() > until || ::waitpid(pid_, nullptr, WNOHANG) == pid_)
        die("sandboxd did not start:\n" + read_text(dir_ + "/sandboxd.log"));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    token_ = read_text(data_ + "/dev-token");
    while (!token_.empty() && (token_.back() == '\n' || token_.back() == ' '))
      token_.pop_back();
  }
  ~daemon_process() {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    guardian_.reset();
  }
  daemon_process(const daemon_process&) = delete;
  daemon_process& operator=(const daemon_process&) = delete;

  std::string address() const { return "unix:" + data_ + "/sandboxd.sock"; }
  const std::string& token() const { return token_; }
  const std::string& dir() const { return dir_; }
  const std::string& data() const { return data_; }

private:
  std::string dir_, data_, token_;
  pid_t pid_ = -1;
  std::unique_ptr<test::guardian> guardian_;
};

// splitmix64: the same archive on every run.
struct random_bytes {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) / 9007199254740992.0; }
  // Log-uniform in [lo, hi).
  std::uint64_t log_uniform(double lo, double hi) {
    return static_cast<std::uint64_t>(lo * std::pow(hi / lo, unit()));
  }
};

struct archive_facts {
  std::string path;
  std::uint64_t bytes = 0; // the archive's size
  std::uint64_t files = 0, symlinks = 0, dirs = 0;
};

// A root filesystem tree of `mib` MiB of file bytes, written to `tree` and archived (GNU tar,
// sorted, owners and times fixed) as `path`. Sizes: 98% log-uniform in [64 B, 48 KiB), 2% in
// [48 KiB, 6 MiB), as a Debian tree has many small files and a few large ones; one file in 30
// has a symlink beside it.
archive_facts make_archive(const std::string& tree, const std::string& path, std::uint64_t mib) {
  archive_facts f;
  f.path = path;
  random_bytes r{26};
  const std::uint64_t want = mib << 20;
  std::uint64_t total = 0;
  std::vector<char> buf;
  fs::create_directories(tree);
  for (int d = 0; total < want; ++d) {
    const std::string dir = tree + "/usr/lib/d" + std::to_string(d);
    fs::create_directories(dir);
    ++f.dirs;
    for (int i = 0; i < 16 && total < want; ++i) {
      std::uint64_t size =
        r.unit() < 0.98 ? r.log_uniform(64, 48 << 10) : r.log_uniform(48 << 10, 6 << 20);
      size = std::min(size, want - total);
      buf.resize((size + 7) / 8 * 8);
      for (std::size_t at = 0; at < buf.size(); at += 8) {
        const auto v = r.next();
        std::memcpy(buf.data() + at, &v, 8);
      }
      const std::string name = dir + "/f" + std::to_string(i);
      std::ofstream out(name, std::ios::binary);
      out.write(buf.data(), static_cast<std::streamsize>(size));
      total += size;
      ++f.files;
      if (f.files % 30 == 0) {
        fs::create_symlink("f" + std::to_string(i), dir + "/l" + std::to_string(i));
        ++f.symlinks;
      }
    }
  }
  if (int rc = run({"/bin/tar", "-C", tree, "--sort=name", "--owner=0", "--group=0",
                    "--numeric-owner", "--mtime=@0", "-cf", path, "."},
                   {}, path + ".log");
      rc != 0)
    die("tar -cf failed: " + read_text(path + ".log"));
  f.bytes = fs::file_size(path);
  return f;
}

// Used bytes of the filesystem holding `path`.
std::uint64_t used_bytes(const std::string& path) {
  struct statvfs s {};
  if (::statvfs(path.c_str(), &s) != 0)
    die("statvfs " + path + ": " + std::strerror(errno));
  return (s.f_blocks - s.f_bfree) * s.f_frsize;
}

// Bytes of the blocks the files below `dir` hold, on `dir`'s filesystem only (mounts below it,
// the layer pool and the sandboxes' overlays, are left out).
std::uint64_t tree_blocks(const std::string& dir) {
  struct stat root {};
  if (::lstat(dir.c_str(), &root) != 0)
    return 0;
  std::uint64_t total = static_cast<std::uint64_t>(root.st_blocks) * 512;
  std::error_code ec;
  for (auto it =
         fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0)
      continue;
    if (st.st_dev != root.st_dev) {
      if (S_ISDIR(st.st_mode))
        it.disable_recursion_pending();
      continue;
    }
    total += static_cast<std::uint64_t>(st.st_blocks) * 512;
  }
  return total;
}

// A runtime's layer pool (a btrfs of its own): mounted at <its directory>/layers, or at its
// /run/sandboxd entry's when the data directory's parents are private (runtime/data_entry.hpp):
// then <its directory>/layers is only the empty directory below the mount.
std::string pool_of(const std::string& runtime_dir) {
  for (const auto& p :
       {runtime::entry_path(runtime_dir, "/run/sandboxd") + "/layers", runtime_dir + "/layers"}) {
    struct statfs f {};
    if (::statfs(p.c_str(), &f) == 0 && f.f_type == BTRFS_SUPER_MAGIC)
      return p;
  }
  die("no btrfs layer pool for " + runtime_dir);
}

void sync_fs(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::syncfs(fd);
    ::close(fd);
  }
}

} // namespace

int main(int argc, char** argv) {
  bool json = false;
  int rounds = 10, import_rounds = 3, disk_sandboxes = 10;
  std::uint64_t import_mib = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto number = [&](int min) {
      if (i + 1 >= argc)
        die(a + " needs a number");
      return std::max(min, std::atoi(argv[++i]));
    };
    if (a == "--json")
      json = true;
    else if (a == "--rounds")
      rounds = number(1);
    else if (a == "--import-rounds")
      import_rounds = number(1);
    else if (a == "--import-mib")
      import_mib = static_cast<std::uint64_t>(number(1));
    else if (a == "--disk-sandboxes")
      disk_sandboxes = number(1);
    else {
      std::fprintf(stderr, "usage: template_bench [--json] [--rounds N] [--import-rounds N] "
                           "[--import-mib N] [--disk-sandboxes N]\n");
      return 2;
    }
  }
  const std::string load_before = load_average();

  test::temp_dir work_dir("template-bench");
  const std::string work_root = work_dir.release(); // the guardian removes it, mounts and all
  test::guardian work_cleanup(test::node_cleanup_command(work_root, {}));
  const std::string work = work_root + "/";
  test::temp_dir node("template-bench-node");
  daemon_process d(node);
  auto c = api::client::connect({d.address(), d.token()});
  if (!c)
    die("connect: " + c.err().message);
  const std::vector<std::string> ctl_env{"SANDBOXD_ADDR=" + d.address(),
                                         "SANDBOXD_TOKEN=" + d.token()};
  const std::string sandboxctl = test::built_program("apps/sandboxctl");

  // 1. The stock python build on this fresh node.
  bool cached = false;
  auto t0 = steady::now();
  auto built =
    c->build_template("python", [&](const std::string& phase, double f, const std::string&) {
      if (phase.find("cached") != std::string::npos)
        cached = true;
      std::fprintf(stderr, "  [%6.1f s] %s%s\n", seconds_since(t0), phase.c_str(),
                   f >= 0 ? (" (" + std::to_string(static_cast<int>(f * 100)) + "%)").c_str() : "");
    });
  const double stock_build_s = seconds_since(t0);
  if (!built)
    die("template build python: " + built.err().message);
  std::printf("stock_build_s %.1f (%s)\n", stock_build_s,
              cached ? "from the cached tarball" : "mmdebstrap");
  std::fflush(stdout);
  if (auto b = c->build_template("base"); !b)
    die("template build base: " + b.err().message);

  // 2. Import against tar -x of the same archive, interleaved.
  const auto a = make_archive(work + "tree", work + "image.tar", import_mib);
  fs::remove_all(work + "tree");
  const double archive_mib = static_cast<double>(a.bytes) / (1 << 20);
  std::printf("archive: %.1f MiB, %llu files, %llu symlinks, %llu directories\n", archive_mib,
              static_cast<unsigned long long>(a.files), static_cast<unsigned long long>(a.symlinks),
              static_cast<unsigned long long>(a.dirs));
  std::fflush(stdout);
  // The reference's filesystem: a btrfs pool as sandboxd makes its layer pools.
  runtime::layer_pool_options po;
  po.data_dir = work + "reference";
  po.pool_bytes = 4ull << 30;
  fs::create_directories(po.data_dir);
  runtime::layer_pool reference(po);
  std::vector<double> import_s, tar_s, tar_sync_s, tar_host_s;
  // tar -xf into `dir`: seconds to its end, and to the end of a syncfs after it.
  auto extract = [&](const std::string& dir) {
    fs::create_directories(dir);
    sync_fs(dir);
    const auto t = steady::now();
    if (int rc = run({"/bin/tar", "-xf", a.path, "-C", dir}, {}, work + "tar.log"); rc != 0)
      die("tar -xf failed: " + read_text(work + "tar.log"));
    const double done = seconds_since(t);
    sync_fs(dir);
    const double synced = seconds_since(t);
    fs::remove_all(dir);
    sync_fs(fs::path(dir).parent_path());
    return std::pair{done, synced};
  };
  for (int i = 0; i < import_rounds; ++i) {
    const auto [pool_done, pool_synced] = extract(reference.mount_point() + "/tree");
    tar_s.push_back(pool_done);
    tar_sync_s.push_back(pool_synced);
    tar_host_s.push_back(extract(d.dir() + "/extract").first); // the data directory's filesystem

    t0 = steady::now();
    const int rc = run({sandboxctl, "template", "import", a.path, "--name", "bench_import"},
                       ctl_env, work + "import.log");
    const double s = seconds_since(t0);
    if (rc != 0)
      die("sandboxctl template import failed (exit " + std::to_string(rc) + ", " +
          std::to_string(s) + " s): " + read_text(work + "import.log"));
    import_s.push_back(s);
    std::printf("  round %d: tar -x %.2f s (with syncfs %.2f s, on the host filesystem %.2f s), "
                "import %.2f s\n",
                i + 1, tar_s.back(), tar_sync_s.back(), tar_host_s.back(), s);
    std::fflush(stdout);
    if (auto r = c->delete_template("bench_import"); !r)
      die("template rm bench_import: " + r.err().message);
  }
  const double best_import = *std::min_element(import_s.begin(), import_s.end());
  const double best_tar = *std::min_element(tar_s.begin(), tar_s.end());
  const double best_tar_sync = *std::min_element(tar_sync_s.begin(), tar_sync_s.end());
  const double best_tar_host = *std::min_element(tar_host_s.begin(), tar_host_s.end());
  const double import_rate = archive_mib / best_import, tar_rate = archive_mib / best_tar;
  const double tar_sync_rate = archive_mib / best_tar_sync;
  const double tar_host_rate = archive_mib / best_tar_host;

  // 3. Creates from base and python on both runtimes, interleaved.
  const std::vector<std::string> runtimes{"crun", "runsc"}, templates{"base", "python"};
  std::map<std::string, std::map<std::string, std::vector<double>>> create_ms;
  auto create_once = [&](const std::string& rt, const std::string& tpl) {
    api::create_options o;
    o.runtime = rt;
    o.template_name = tpl;
    const auto t = steady::now();
    auto sb = c->create(o);
    const double ms = seconds_since(t) * 1000;
    if (!sb)
      die("create --template " + tpl + " --runtime " + rt + ": " + sb.err().message);
    if (auto r = c->remove(sb->id); !r)
      die("delete " + sb->id + ": " + r.err().message);
    return ms;
  };
  for (const auto& rt : runtimes) // warm: the first create of each pays for page-cache misses
    for (const auto& tpl : templates)
      create_once(rt, tpl);
  for (int i = 0; i < rounds; ++i)
    for (const auto& rt : runtimes)
      for (const auto& tpl : templates)
        create_ms[rt][tpl].push_back(create_once(rt, tpl));
  nlohmann::json create_p50;
  double python_vs_base = 0;
  std::map<std::string, double> ratio;
  for (const auto& rt : runtimes) {
    for (const auto& tpl : templates)
      create_p50[rt][tpl] = median(create_ms[rt][tpl]);
    ratio[rt] = median(create_ms[rt]["python"]) / median(create_ms[rt]["base"]);
    python_vs_base = std::max(python_vs_base, ratio[rt]);
  }

  // 4. What a fresh python sandbox adds to the disk, on each runtime.
  std::map<std::string, std::pair<double, double>> disk; // runtime -> (pool, host) KiB each
  for (const auto& rt : runtimes) {
    const std::string dir = d.data() + "/runtimes/" + rt, pool = pool_of(dir);
    // btrfs frees a deleted layer's space in the background (the create rounds deleted many):
    // wait for that first, or the pool's used space moves by what it frees meanwhile.
    auto measure = [&] {
      if (int rc =
            run({"/bin/sh", "-c", "btrfs subvolume sync \"$0\"", pool}, {}, work + "settle.log");
          rc != 0)
        die("btrfs subvolume sync " + pool + ": " + read_text(work + "settle.log"));
      sync_fs(pool);
      sync_fs(dir);
      return std::pair{used_bytes(pool), tree_blocks(dir)};
    };
    const auto before = measure();
    std::vector<std::string> ids;
    for (int i = 0; i < disk_sandboxes; ++i) {
      api::create_options o;
      o.runtime = rt;
      o.template_name = "python";
      auto sb = c->create(o);
      if (!sb)
        die("create --template python --runtime " + rt + ": " + sb.err().message);
      ids.push_back(sb->id);
    }
    const auto after = measure();
    for (const auto& id : ids)
      if (auto r = c->remove(id); !r)
        die("delete " + id + ": " + r.err().message);
    auto grown = [&](std::uint64_t b, std::uint64_t a) {
      return (a > b ? static_cast<double>(a - b) : 0.0) / 1024 / disk_sandboxes;
    };
    disk[rt] = {grown(before.first, after.first), grown(before.second, after.second)};
  }
  double disk_kib = 0;
  for (const auto& [rt, kib] : disk)
    disk_kib = std::max(disk_kib, kib.first + kib.second);
  const std::string load_after = load_average();

  std::printf("template_bench: a sandboxd of its own (crun and runsc, embedded log and "
              "PostgreSQL); load average %s before, %s after\n",
              load_before.c_str(), load_after.c_str());
  std::printf("  stock_build_s           %8.1f  template build python (%s)\n", stock_build_s,
              cached ? "from the cached tarball" : "mmdebstrap");
  std::printf("  import_mib_per_s        %8.1f  sandboxctl template import, %.0f MiB plain tar, "
              "best of %d\n",
              import_rate, archive_mib, import_rounds);
  std::printf("  tar_extract_mib_per_s   %8.1f  reference: tar -xf of the same archive into a "
              "btrfs layer pool (%.1f with syncfs; %.1f onto the host filesystem)\n",
              tar_rate, tar_sync_rate, tar_host_rate);
  std::printf("  import_vs_tar           %8.2f  (target >= 0.5)\n", import_rate / tar_rate);
  for (const auto& rt : runtimes)
    std::printf("  create_p50_ms %-6s    base %7.1f  python %7.1f  python/base %.2f\n", rt.c_str(),
                median(create_ms[rt]["base"]), median(create_ms[rt]["python"]), ratio[rt]);
  std::printf("  python_vs_base          %8.2f  the larger of the two (target <= 1.2)\n",
              python_vs_base);
  for (const auto& [rt, kib] : disk)
    std::printf("  disk_kib_per_sandbox %-6s %6.1f  a fresh python sandbox: %.1f in the layer pool "
                "+ %.1f on the host filesystem, %d sandboxes\n",
                rt.c_str(), kib.first + kib.second, kib.first, kib.second, disk_sandboxes);
  std::printf("  disk_kib_per_sandbox    %8.1f  the larger of the two (target <= 1024)\n",
              disk_kib);
  if (json) {
    nlohmann::json disk_json;
    for (const auto& [rt, kib] : disk)
      disk_json[rt] = {{"pool_kib", kib.first}, {"host_kib", kib.second}};
    nlohmann::json j{{"benchmark", "template_bench"},
                     {"import_mib_per_s", import_rate},
                     {"tar_extract_mib_per_s", tar_rate},
                     {"import_vs_tar", import_rate / tar_rate},
                     {"tar_extract_sync_mib_per_s", tar_sync_rate},
                     {"tar_extract_host_mib_per_s", tar_host_rate},
                     {"import_archive_mib", archive_mib},
                     {"import_archive_files", a.files},
                     {"import_s", import_s},
                     {"tar_extract_s", tar_s},
                     {"create_p50_ms", create_p50},
                     {"python_vs_base", python_vs_base},
                     {"python_vs_base_crun", ratio["crun"]},
                     {"python_vs_base_runsc", ratio["runsc"]},
                     {"create_rounds", rounds},
                     {"disk_kib_per_sandbox", disk_kib},
                     {"disk_kib_by_runtime", disk_json},
                     {"stock_build_s", stock_build_s},
                     {"stock_build_cached", cached},
                     {"load_before", load_before},
                     {"load_after", load_after}};
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}
