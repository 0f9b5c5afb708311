// C++ workload of the symbolization tests (.cpp: the test build compiles tests/**/*.cc): namespaces,
// templates, overloads, a lambda and a virtual call. argv[1]: iterations in millions.
#include <cstdlib>
#include <vector>
namespace geo {
template <class T>
struct Accumulator {
  __attribute__((noinline)) static T run(T n, int k) {
    volatile T s = 0;
    for (T i = 0; i < n; i++) s += i * k;
    return s;
  }
};
struct Shape {
  virtual ~Shape() = default;
  virtual long area(long n) const = 0;
};
struct Square : Shape {
  __attribute__((noinline)) long area(long n) const override { return Accumulator<long>::run(n, 3); }
};
}  // namespace geo
__attribute__((noinline)) long overloaded(long n) { return geo::Accumulator<long>::run(n, 2); }
__attribute__((noinline)) long overloaded(int n) { return geo::Accumulator<int>::run(n, 5); }
int main(int argc, char** argv) {
  long n = (argc > 1 ? std::atol(argv[1]) : 40) * 1000000L;
  std::vector<geo::Shape*> shapes{new geo::Square()};
  auto lambda = [&](long m) { return shapes[0]->area(m); };
  long t = overloaded(n / 3) + overloaded(static_cast<int>(n / 3)) + lambda(n / 3);
  for (auto* s : shapes) delete s;
  return static_cast<int>(t & 1);
}
