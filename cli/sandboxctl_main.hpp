// sandboxctl_main — the whole of sandboxctl behind one call: parse the command line with the
// command table, run the chosen command, and map every outcome to the exit code of
// exit_codes.hpp (--help: 0; a parse error: 200 with one line on stderr).
#pragma once

namespace sandboxd::cli {

int sandboxctl_main(int argc, char** argv);

} // namespace sandboxd::cli
