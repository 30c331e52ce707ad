// The Catch2 (v2) entry point shared by both test binaries.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
