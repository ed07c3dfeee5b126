# Every dependency is a Debian package (scripts/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
# The HTTP server (src/server/http) uses Boost.Beast and Boost.Asio, header-only (Boost.System is header-only
# since 1.69): no Boost library is linked.
find_package(Boost 1.69 REQUIRED)
if(SAKER_TESTS)
  find_package(GTest REQUIRED)
endif()
