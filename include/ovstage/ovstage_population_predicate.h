/*
 * Population predicates: which USD prims and which of their properties population brings into
 * the stage. A predicate is a kind plus, depending on the kind, strings (alternatives: any one
 * matches), nested predicates, or one property predicate.
 *
 * The constructors reference nested objects and strings; they do not copy them, so those must
 * outlive the predicate (the entry points copy the whole graph when they enqueue).
 */
#ifndef OVSTAGE_POPULATION_PREDICATE_H
#define OVSTAGE_POPULATION_PREDICATE_H

#include <stddef.h>
#include <string.h>

#include "../ovx/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ovstage_population_prim_predicate_kind_t {
    OVSTAGE_POPULATION_PRIM_PREDICATE_NONE = 0,   /* matches nothing */
    OVSTAGE_POPULATION_PRIM_PREDICATE_ALL = 1,    /* matches every prim */
    OVSTAGE_POPULATION_PRIM_PREDICATE_AND = 2,    /* subpredicates, value_count of them */
    OVSTAGE_POPULATION_PRIM_PREDICATE_OR = 3,     /* subpredicates, value_count of them */
    OVSTAGE_POPULATION_PRIM_PREDICATE_NOT = 4,    /* subpredicates, exactly 1 */
    OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PARENT = 5,   /* subpredicates, exactly 1 */
    OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_ANCESTOR = 6, /* subpredicates, exactly 1 */
    OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PROPERTY = 7, /* property_predicate, exactly 1 */
    /* The kinds below take `strings`, value_count of them. */
    OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_TYPE = 8,
    OVSTAGE_POPULATION_PRIM_PREDICATE_IS_A_TYPE = 9,
    OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_SCHEMA = 10,
    OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_APPLIED_SCHEMA = 11,
    OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_APPLIED_SCHEMA_IN_NAMESPACE = 12,
    OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PATH = 13,
    OVSTAGE_POPULATION_PRIM_PREDICATE_IS_UNDER_PATH = 14,
    OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_KIND = 15,
    OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PURPOSE = 16,
    OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_METADATA = 17
} ovstage_population_prim_predicate_kind_t;

typedef enum ovstage_population_property_predicate_kind_t {
    OVSTAGE_POPULATION_PROPERTY_PREDICATE_NONE = 0,
    OVSTAGE_POPULATION_PROPERTY_PREDICATE_ALL = 1,
    OVSTAGE_POPULATION_PROPERTY_PREDICATE_AND = 2, /* subpredicates, value_count of them */
    OVSTAGE_POPULATION_PROPERTY_PREDICATE_OR = 3,  /* subpredicates, value_count of them */
    OVSTAGE_POPULATION_PROPERTY_PREDICATE_NOT = 4, /* subpredicates, exactly 1 */
    /* DECLARED_BY_SCHEMA .. HAS_METADATA take `strings`, value_count of them. */
    OVSTAGE_POPULATION_PROPERTY_PREDICATE_DECLARED_BY_SCHEMA = 5,
    OVSTAGE_POPULATION_PROPERTY_PREDICATE_HAS_NAME = 6,
    OVSTAGE_POPULATION_PROPERTY_PREDICATE_IN_NAMESPACE = 7,
    OVSTAGE_POPULATION_PROPERTY_PREDICATE_HAS_METADATA = 8,
    OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_ATTRIBUTE = 9,
    OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_RELATIONSHIP = 10,
    OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_CUSTOM = 11,
    OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_AUTHORED = 12
} ovstage_population_property_predicate_kind_t;

typedef struct ovstage_population_prim_predicate_t ovstage_population_prim_predicate_t;
typedef struct ovstage_population_property_predicate_t ovstage_population_property_predicate_t;

/* `kind` selects the live member of `values`. */
struct ovstage_population_property_predicate_t {
    ovstage_population_property_predicate_kind_t kind;
    union {
        const ovx_string_t* strings;
        const ovstage_population_property_predicate_t* subpredicates;
    } values;
    size_t value_count;
};

struct ovstage_population_prim_predicate_t {
    ovstage_population_prim_predicate_kind_t kind;
    union {
        const ovx_string_t* strings;
        const ovstage_population_prim_predicate_t* subpredicates;
        const ovstage_population_property_predicate_t* property_predicate;
    } values;
    size_t value_count;
};

/* Shared by the constructors below: a zeroed predicate with kind, one member and the count. */
static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_build_(
    ovstage_population_prim_predicate_kind_t kind, const ovx_string_t* strings,
    const ovstage_population_prim_predicate_t* subpredicates, size_t count)
{
    ovstage_population_prim_predicate_t predicate;
    memset(&predicate, 0, sizeof predicate);
    predicate.kind = kind;
    if (subpredicates != NULL) {
        predicate.values.subpredicates = subpredicates;
    } else {
        predicate.values.strings = strings;
    }
    predicate.value_count = count;
    return predicate;
}

static inline ovstage_population_property_predicate_t
ovstage_population_property_predicate_build_(
    ovstage_population_property_predicate_kind_t kind, const ovx_string_t* strings,
    const ovstage_population_property_predicate_t* subpredicates, size_t count)
{
    ovstage_population_property_predicate_t predicate;
    memset(&predicate, 0, sizeof predicate);
    predicate.kind = kind;
    if (subpredicates != NULL) {
        predicate.values.subpredicates = subpredicates;
    } else {
        predicate.values.strings = strings;
    }
    predicate.value_count = count;
    return predicate;
}

/* One constructor per kind ------------------------------------------------------------------ */

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_none(void)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_NONE, NULL, NULL, 0);
}

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_all(void)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_ALL, NULL, NULL, 0);
}

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_and(
    const ovstage_population_prim_predicate_t* subpredicates, size_t count)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_AND, NULL, subpredicates, count);
}

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_or(
    const ovstage_population_prim_predicate_t* subpredicates, size_t count)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_OR, NULL, subpredicates, count);
}

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_not(
    const ovstage_population_prim_predicate_t* subpredicate)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_NOT, NULL, subpredicate, 1);
}

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_parent(
    const ovstage_population_prim_predicate_t* subpredicate)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PARENT, NULL, subpredicate, 1);
}

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_ancestor(
    const ovstage_population_prim_predicate_t* subpredicate)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_ANCESTOR, NULL, subpredicate, 1);
}

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_property(
    const ovstage_population_property_predicate_t* property_predicate)
{
    ovstage_population_prim_predicate_t predicate = ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PROPERTY, NULL, NULL, 1);
    predicate.values.property_predicate = property_predicate;
    return predicate;
}

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_type(
    const ovx_string_t* values, size_t count)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_TYPE, values, NULL, count);
}

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_is_a_type(
    const ovx_string_t* values, size_t count)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_IS_A_TYPE, values, NULL, count);
}

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_schema(
    const ovx_string_t* values, size_t count)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_SCHEMA, values, NULL, count);
}

static inline ovstage_population_prim_predicate_t
ovstage_population_prim_predicate_has_applied_schema(
    const ovx_string_t* values, size_t count)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_APPLIED_SCHEMA, values, NULL, count);
}

static inline ovstage_population_prim_predicate_t
ovstage_population_prim_predicate_has_applied_schema_in_namespace(
    const ovx_string_t* values, size_t count)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_APPLIED_SCHEMA_IN_NAMESPACE, values, NULL, count);
}

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_path(
    const ovx_string_t* values, size_t count)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PATH, values, NULL, count);
}

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_is_under_path(
    const ovx_string_t* values, size_t count)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_IS_UNDER_PATH, values, NULL, count);
}

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_kind(
    const ovx_string_t* values, size_t count)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_KIND, values, NULL, count);
}

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_purpose(
    const ovx_string_t* values, size_t count)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_PURPOSE, values, NULL, count);
}

static inline ovstage_population_prim_predicate_t ovstage_population_prim_predicate_has_metadata(
    const ovx_string_t* values, size_t count)
{
    return ovstage_population_prim_predicate_build_(
        OVSTAGE_POPULATION_PRIM_PREDICATE_HAS_METADATA, values, NULL, count);
}

static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_none(
    void)
{
    return ovstage_population_property_predicate_build_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_NONE, NULL, NULL, 0);
}

static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_all(
    void)
{
    return ovstage_population_property_predicate_build_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_ALL, NULL, NULL, 0);
}

static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_and(
    const ovstage_population_property_predicate_t* subpredicates, size_t count)
{
    return ovstage_population_property_predicate_build_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_AND, NULL, subpredicates, count);
}

static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_or(
    const ovstage_population_property_predicate_t* subpredicates, size_t count)
{
    return ovstage_population_property_predicate_build_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_OR, NULL, subpredicates, count);
}

static inline ovstage_population_property_predicate_t ovstage_population_property_predicate_not(
    const ovstage_population_property_predicate_t* subpredicate)
{
    return ovstage_population_property_predicate_build_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_NOT, NULL, subpredicate, 1);
}

static inline ovstage_population_property_predicate_t
ovstage_population_property_predicate_declared_by_schema(
    const ovx_string_t* values, size_t count)
{
    return ovstage_population_property_predicate_build_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_DECLARED_BY_SCHEMA, values, NULL, count);
}

static inline ovstage_population_property_predicate_t
ovstage_population_property_predicate_has_name(
    const ovx_string_t* values, size_t count)
{
    return ovstage_population_property_predicate_build_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_HAS_NAME, values, NULL, count);
}

static inline ovstage_population_property_predicate_t
ovstage_population_property_predicate_in_namespace(
    const ovx_string_t* values, size_t count)
{
    return ovstage_population_property_predicate_build_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_IN_NAMESPACE, values, NULL, count);
}

static inline ovstage_population_property_predicate_t
ovstage_population_property_predicate_has_metadata(
    const ovx_string_t* values, size_t count)
{
    return ovstage_population_property_predicate_build_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_HAS_METADATA, values, NULL, count);
}

static inline ovstage_population_property_predicate_t
ovstage_population_property_predicate_is_attribute(
    void)
{
    return ovstage_population_property_predicate_build_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_ATTRIBUTE, NULL, NULL, 0);
}

static inline ovstage_population_property_predicate_t
ovstage_population_property_predicate_is_relationship(
    void)
{
    return ovstage_population_property_predicate_build_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_RELATIONSHIP, NULL, NULL, 0);
}

static inline ovstage_population_property_predicate_t
ovstage_population_property_predicate_is_custom(
    void)
{
    return ovstage_population_property_predicate_build_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_CUSTOM, NULL, NULL, 0);
}

static inline ovstage_population_property_predicate_t
ovstage_population_property_predicate_is_authored(
    void)
{
    return ovstage_population_property_predicate_build_(
        OVSTAGE_POPULATION_PROPERTY_PREDICATE_IS_AUTHORED, NULL, NULL, 0);
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OVSTAGE_POPULATION_PREDICATE_H */
