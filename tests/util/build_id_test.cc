// util::read_build_id against readelf's view of the same files (binutils is the oracle).
#include "util/build_id.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <vector>

#include "test_util.h"

namespace tperf::util {
namespace {

using test::run_command;
using test::shell_quote;

// The build id `readelf -n` prints for a file, "" when it prints none.
std::string readelf_build_id(const std::string& path) {
  std::string out = run_command("readelf -n " + shell_quote(path) + " 2>/dev/null");
  std::smatch m;
  static const std::regex re("Build ID: ([0-9a-f]+)");
  return std::regex_search(out, m, re) ? m[1].str() : "";
}

TEST(BuildId, MatchesReadelfOnSystemAndBuiltFiles) {
  if (!test::have_program("readelf") || !test::have_program("cc")) GTEST_SKIP() << "needs readelf and cc";
  test::TempDir dir;
  std::ofstream(dir.file("m.c")) << "int main(void) { return 0; }\n";
  int st = 0;
  run_command("cc -o " + dir.file("sha1") + " -Wl,--build-id=sha1 " + dir.file("m.c") + " && cc -o " +
                  dir.file("md5") + " -Wl,--build-id=md5 " + dir.file("m.c") + " && cc -o " + dir.file("none") +
                  " -Wl,--build-id=none " + dir.file("m.c") + " && objcopy --only-keep-debug " + dir.file("sha1") +
                  " " + dir.file("sha1.debug"),
              &st);
  ASSERT_EQ(st, 0);
  for (const std::string& path : {std::string("/bin/ls"), dir.file("sha1"), dir.file("md5"), dir.file("sha1.debug")}) {
    std::string expect = readelf_build_id(path);
    ASSERT_FALSE(expect.empty()) << path;
    std::string error;
    auto id = read_build_id(path, &error);
    ASSERT_TRUE(id) << path << ": " << error;
    EXPECT_EQ(id->hex(), expect) << path;
    // The same bytes from memory.
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto mem = read_build_id_from_memory(image);
    ASSERT_TRUE(mem);
    EXPECT_EQ(*mem, *id);
    EXPECT_EQ(BuildId::from_hex(expect), id);
  }
  EXPECT_EQ(readelf_build_id(dir.file("md5")).size(), 32u);

  std::string error;
  EXPECT_FALSE(read_build_id(dir.file("none"), &error));
  EXPECT_EQ(error, "no build-id note");
  EXPECT_FALSE(read_build_id(dir.file("m.c"), &error));
  EXPECT_EQ(error, "not an ELF file");
  EXPECT_FALSE(read_build_id(dir.file("missing"), &error));
  EXPECT_EQ(error, "No such file or directory");
}

TEST(BuildId, TruncatedImagesNeverCrash) {
  std::ifstream in("/bin/ls", std::ios::binary);
  std::vector<uint8_t> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(image.size(), 4096u);
  for (size_t n : {size_t{0}, size_t{4}, size_t{52}, size_t{64}, size_t{200}, size_t{700}, size_t{1000}, size_t{4096}}) {
    (void)read_build_id_from_memory({image.data(), n});
  }
}

TEST(BuildId, HexParsing) {
  EXPECT_FALSE(BuildId::from_hex(""));
  EXPECT_FALSE(BuildId::from_hex("abc"));
  EXPECT_FALSE(BuildId::from_hex("zz"));
  EXPECT_FALSE(BuildId::from_hex(std::string(42, 'a')));
  auto id = BuildId::from_hex("00FF10");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->size, 3);
  EXPECT_EQ(id->hex(), "00ff10");
}

}  // namespace
}  // namespace tperf::util
