#include <cstdio>

int main() {
  std::puts("orchid");
  return 0;
}
