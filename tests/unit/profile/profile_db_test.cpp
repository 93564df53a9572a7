// The profile database: round trip (exact numbers), failures remembered, atomic writes
// that merge what another process saved, clear errors naming the file for bad input,
// default location.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include "profile/profile_db.hpp"
#include "util/error.hpp"

namespace fs = std::filesystem;

namespace orchid {
namespace {

class ProfileDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("orchid_profile_db_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name = "sub/profile-cpu.json") const {
    return (dir_ / name).string();
  }
  void write(const std::string& p, const std::string& text) const {
    fs::create_directories(fs::path(p).parent_path());
    std::ofstream(p) << text;
  }
  static std::string error_of(const std::string& p, const std::string& device = "cpu") {
    try {
      ProfileDb::open(p, device);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

ProfileEntry entry(double median, int reps) {
  ProfileEntry e;
  e.median_us = median;
  e.p10_us = median * 0.9;
  e.p90_us = median * 1.3;
  e.reps = reps;
  e.timer_version = 1;
  e.kernel = "MatMul+Relu -> f32[8x32]";
  return e;
}

TEST_F(ProfileDbTest, RoundTripKeepsEveryNumberExactly) {
  ProfileDb db(path(), "cpu");
  db.put(0x0123456789abcdefull, entry(12.345678901234567, 50));
  db.put(42, entry(0.1 + 0.2, 3));
  ProfileEntry failed;
  failed.error = "executor: unsupported";
  failed.timer_version = 1;
  failed.kernel = "Foo -> f32[1]";
  db.put(7, failed);
  EXPECT_TRUE(db.dirty());
  db.save();  // creates the folder
  EXPECT_FALSE(db.dirty());
  const ProfileDb back = ProfileDb::open(path(), "cpu");
  ASSERT_EQ(back.size(), 3u);
  const ProfileEntry* a = back.find(0x0123456789abcdefull);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->median_us, 12.345678901234567);
  EXPECT_EQ(a->p10_us, 12.345678901234567 * 0.9);
  EXPECT_EQ(a->reps, 50);
  EXPECT_EQ(a->kernel, "MatMul+Relu -> f32[8x32]");
  EXPECT_EQ(back.find(42)->median_us, 0.1 + 0.2);
  EXPECT_FALSE(back.find(7)->ok());
  EXPECT_EQ(back.find(7)->error, "executor: unsupported");
  EXPECT_EQ(back.find(8), nullptr);
  EXPECT_EQ(back.to_json(), db.to_json());
}

TEST_F(ProfileDbTest, InContextTimesRoundTripOnTimedAndFailedEntries) {
  ProfileDb db(path(), "cpu");
  ProfileEntry timed = entry(20, 10);
  timed.context_us = 7.25;
  timed.context_spread = 2.5;  // kept after re-timing: marked by its spread
  timed.context_reps = 12;
  db.put(1, timed);
  ProfileEntry failed;
  failed.error = "could not run alone";
  failed.timer_version = 1;
  failed.context_us = 3.5;
  failed.context_spread = 1.1;
  failed.context_reps = 5;
  db.put(2, failed);
  db.put(3, entry(4, 3));  // none
  db.save();
  const ProfileDb back = ProfileDb::open(path(), "cpu");
  EXPECT_EQ(back.find(1)->context_us, 7.25);
  EXPECT_EQ(back.find(1)->context_spread, 2.5);
  EXPECT_EQ(back.find(1)->context_reps, 12);
  EXPECT_EQ(back.find(2)->context_us, 3.5);
  EXPECT_FALSE(back.find(2)->ok());
  EXPECT_EQ(back.find(3)->context_us, 0);
  EXPECT_EQ(back.to_json(), db.to_json());

  write(path("bad.json"), R"({"format": "orchid-profile-db", "version": 1, "device": "cpu",
               "entries": {"0000000000000001": {"timer": 1, "median_us": 1, "p10_us": 1,
                                                "p90_us": 2, "reps": 3, "context_us": 0,
                                                "context_spread": 1, "context_reps": 3}}})");
  const std::string e = error_of(path("bad.json"));
  EXPECT_NE(e.find("context_us > 0"), std::string::npos) << e;
  EXPECT_NE(e.find("entries.0000000000000001"), std::string::npos) << e;
}

TEST_F(ProfileDbTest, NoisyEntriesAreNeverStoredNorRead) {
  ProfileEntry noisy = entry(10.0, 20);
  noisy.p10_us = 5.0;
  noisy.p90_us = 5.0 * ProfileEntry::kMaxSpread * 1.01;  // spread too wide
  EXPECT_TRUE(noisy.too_noisy());
  ProfileEntry failed;
  failed.error = "cannot run";
  EXPECT_FALSE(failed.too_noisy());  // errors have no spread
  ProfileDb db(path(), "cpu");
  EXPECT_FALSE(db.put(1, noisy));
  EXPECT_EQ(db.find(1), nullptr);
  EXPECT_FALSE(db.dirty());
  EXPECT_TRUE(db.put(2, entry(10.0, 20)));
  db.save();
  // A file written by a tolerant writer (an older orchid): noisy entries are dropped
  // when read, so they are measured again.
  ProfileDb tolerant(path(), "cpu", std::numeric_limits<double>::infinity());
  EXPECT_TRUE(tolerant.put(3, noisy));
  EXPECT_TRUE(tolerant.put(2, entry(10.0, 20)));
  tolerant.save();
  const ProfileDb back = ProfileDb::open(path(), "cpu");
  EXPECT_EQ(back.size(), 1u);
  EXPECT_NE(back.find(2), nullptr);
  EXPECT_EQ(back.find(3), nullptr);
}

TEST_F(ProfileDbTest, MissingFileIsAnEmptyDatabase) {
  EXPECT_EQ(ProfileDb::open(path(), "cpu").size(), 0u);
}

TEST_F(ProfileDbTest, SaveIsAtomicAndMergesWhatOthersSaved) {
  ProfileDb mine = ProfileDb::open(path(), "cpu");
  ProfileDb theirs = ProfileDb::open(path(), "cpu");
  theirs.put(1, entry(1.0, 3));
  theirs.put(2, entry(2.0, 3));
  theirs.save();
  mine.put(2, entry(20.0, 5));  // ours wins for the same kernel
  mine.put(3, entry(3.0, 3));
  mine.save();
  const ProfileDb back = ProfileDb::open(path(), "cpu");
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back.find(1)->median_us, 1.0);
  EXPECT_EQ(back.find(2)->median_us, 20.0);
  // No temporary file left next to it.
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(fs::path(path()).parent_path())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

TEST_F(ProfileDbTest, CorruptOrForeignFilesAreErrorsNamingTheFile) {
  const std::string p = path("bad.json");
  write(p, "{\"format\": \"orchid-profile-db\", \"vers");
  std::string e = error_of(p);
  EXPECT_NE(e.find(p), std::string::npos) << e;
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;

  write(p, R"({"format": "something-else"})");
  EXPECT_NE(error_of(p).find("not an orchid profile database"), std::string::npos);

  write(p, R"({"format": "orchid-profile-db", "version": 99, "device": "cpu", "entries": {}})");
  EXPECT_NE(error_of(p).find("format version 99"), std::string::npos);

  write(p, R"({"format": "orchid-profile-db", "version": 1, "device": "a100", "entries": {}})");
  e = error_of(p);
  EXPECT_NE(e.find("'a100'"), std::string::npos) << e;

  write(p, R"({"format": "orchid-profile-db", "version": 1, "device": "cpu",
               "entries": {"0000000000000001": {"timer": 1, "p10_us": 1, "p90_us": 2,
                                                "reps": 3}}})");
  e = error_of(p);
  EXPECT_NE(e.find("entries.0000000000000001.median_us"), std::string::npos) << e;
  EXPECT_NE(e.find(p), std::string::npos) << e;

  write(p, R"({"format": "orchid-profile-db", "version": 1, "device": "cpu",
               "entries": {"xyz": {}}})");
  EXPECT_NE(error_of(p).find("'entries.xyz'"), std::string::npos);

  write(p, R"({"format": "orchid-profile-db", "version": 1, "device": "cpu",
               "entries": {"0000000000000001": {"timer": 1, "median_us": -1, "p10_us": 1,
                                                "p90_us": 2, "reps": 3}}})");
  EXPECT_NE(error_of(p).find("median_us > 0"), std::string::npos);
}

TEST_F(ProfileDbTest, DefaultPathFollowsXdgCacheHome) {
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old_xdg ? old_xdg : "";
  ::setenv("XDG_CACHE_HOME", "/some/cache", 1);
  EXPECT_EQ(default_profile_db_path("cpu"), "/some/cache/orchid/profile-cpu.json");
  EXPECT_EQ(default_profile_db_path("my/dev"), "/some/cache/orchid/profile-my_dev.json");
  ::unsetenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (home && *home) {
    EXPECT_EQ(default_profile_db_path("cpu"),
              (fs::path(home) / ".cache/orchid/profile-cpu.json").string());
  }
  if (old_xdg) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

}  // namespace
}  // namespace orchid
