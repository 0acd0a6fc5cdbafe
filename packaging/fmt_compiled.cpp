// fmt's out-of-line part for the self-contained build, compiled once. Debian ships libfmt as a
// shared object only; fmt's header-only mode would compile this part again into each of the ~70
// files that format text (2-4 s of compiler time each, half the cost of a file). Its source is
// Debian's own header, format-inl.h; the few templates that header defines for the library to
// instantiate are instantiated here for char, the only character type xlaunch formats.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
}  // namespace detail
FMT_END_NAMESPACE
