/*
 * Declaration macros of the ovstage headers.
 *
 * OVSTAGE_API marks the functions libovstage.so exports (an ovstage-go addition; the exported
 * names and signatures are those of the reference). It gives them default visibility, so a
 * library built with -fvisibility=hidden still exports exactly these; define it before the
 * first include to override.
 *
 * OVSTAGE_DEPRECATED(msg) marks a declaration deprecated on compilers that support it. No
 * declaration of this version uses it.
 */
#ifndef OVSTAGE_API_DEFINES_H
#define OVSTAGE_API_DEFINES_H

#ifndef OVSTAGE_API
#if defined(__GNUC__) || defined(__clang__)
#define OVSTAGE_API __attribute__((visibility("default")))
#else
#define OVSTAGE_API
#endif
#endif

#if defined(__cplusplus) && __cplusplus >= 201402L
#define OVSTAGE_DEPRECATED(msg) [[deprecated(msg)]]
#elif defined(__GNUC__) || defined(__clang__)
#define OVSTAGE_DEPRECATED(msg) __attribute__((deprecated(msg)))
#elif defined(_MSC_VER)
#define OVSTAGE_DEPRECATED(msg) __declspec(deprecated(msg))
#else
#define OVSTAGE_DEPRECATED(msg)
#endif

#endif /* OVSTAGE_API_DEFINES_H */
