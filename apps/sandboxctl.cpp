// sandboxctl — the command line of sandboxd (docs/cli.md). Everything is in cli/; this is
// its main().
#include "cli/sandboxctl_main.hpp"

int main(int argc, char** argv) {
  return sandboxd::cli::sandboxctl_main(argc, argv);
}
