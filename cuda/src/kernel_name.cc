// Kernel labels from demangled names; kernel_name.h has the contract.
#include "kernel_name.h"

#include <cxxabi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

namespace gs {
namespace {

// FNV-1a, 32 bits: stable across builds and machines, so a cut label names
// the same kernel everywhere.
uint32_t Fnv1a(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

void Printable(std::string& s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
}

// CutUtf8 cuts s to at most n bytes on a UTF-8 boundary.
void CutUtf8(std::string& s, size_t n) {
  if (s.size() <= n) return;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) n--;
  s.resize(n);
}

}  // namespace

std::string FullKernelName(const char* mangled) {
  if (!mangled || !*mangled) return "?";
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = (status == 0 && d) ? std::string(d) : std::string(mangled);
  free(d);
  Printable(out);
  CutUtf8(out, kMaxFullNameBytes);
  return out;
}

std::string KernelLabel(const std::string& full) {
  std::string s = full;
  // Parameters: the last top-level "(...)", and any qualifier after it.
  size_t end = s.size();
  while (end > 0 && s[end - 1] != ')') end--;
  if (end > 0) {
    int depth = 0;
    for (size_t i = end; i-- > 0;) {
      if (s[i] == ')') depth++;
      if (s[i] == '(' && --depth == 0) {
        if (i > 0) s.resize(i);
        break;
      }
    }
  }
  // Return type: whatever precedes the last space outside template brackets
  // and parentheses ("void (anonymous namespace)::k<...>" keeps the
  // namespace).
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); i++) {
    char c = s[i];
    if (c == '<' || c == '(') depth++;
    if ((c == '>' || c == ')') && depth > 0) depth--;
    if (c == ' ' && depth == 0) start = i + 1;
  }
  s = s.substr(start);
  Printable(s);
  if (s.empty()) s = "?";
  if (s.size() > kMaxLabelBytes) {
    char tag[16];
    snprintf(tag, sizeof tag, "...#%08x", Fnv1a(full));
    CutUtf8(s, kMaxLabelBytes - 12);
    s += tag;
  }
  return s;
}

}  // namespace gs
