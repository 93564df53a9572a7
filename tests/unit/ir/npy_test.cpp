#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ir/npy.hpp"
#include "util/error.hpp"

namespace orchid {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("orchid_npy_" + name)).string();
}

TEST(Npy, RoundTripsEveryDtype) {
  for (DType d : {DType::F32, DType::F16, DType::F64, DType::I64, DType::I32, DType::I8, DType::U8,
                  DType::Bool}) {
    Tensor t = Tensor::from_vector<float>({2, 3}, {0, 1, 2, 3, 4, 5}).cast(d);
    const std::string path = temp_path(std::string(dtype_name(d)) + ".npy");
    write_npy(path, t);
    EXPECT_EQ(read_npy(path), t) << dtype_name(d);
  }
  Tensor scalar = Tensor::scalar_f32(3.5f);
  write_npy(temp_path("scalar.npy"), scalar);
  EXPECT_EQ(read_npy(temp_path("scalar.npy")), scalar);
}

TEST(Npy, HeaderIsWhatNumpyWrites) {
  write_npy(temp_path("h.npy"), Tensor(DType::F32, {3}));
  std::ifstream in(temp_path("h.npy"), std::ios::binary);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(content.find("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"),
            std::string::npos);
  EXPECT_EQ((content.size() - 12) % 4, 0u);
  EXPECT_EQ((content.find('\n') + 1) % 64, 0u);  // data aligned to 64 bytes
}

TEST(Npy, BadFilesGiveClearErrors) {
  {
    std::ofstream out(temp_path("bad.npy"));
    out << "not a numpy file";
  }
  try {
    (void)read_npy(temp_path("bad.npy"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.npy"), std::string::npos);
  }
  EXPECT_THROW((void)read_npy(temp_path("does_not_exist.npy")), Error);
  write_npy(temp_path("trunc.npy"), Tensor(DType::F32, {100}));
  std::filesystem::resize_file(temp_path("trunc.npy"), 100);
  EXPECT_THROW((void)read_npy(temp_path("trunc.npy")), Error);
}

}  // namespace
}  // namespace orchid
