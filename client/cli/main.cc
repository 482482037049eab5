// gloowatch: operator CLI for gloowatchd clusters (client/cli/cli.h).
#include "client/cli/cli.h"

int main(int argc, char** argv) { return gloowatch::client::RunCli(argc, argv); }
