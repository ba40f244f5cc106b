/*
 * Thread-local diagnostics: the text behind ovstage_get_last_error (overwritten by the
 * thread's next API call), the failed op ids and texts of the thread's latest wait_op (valid
 * until its next wait_op; an op's text also ends with its release_op), the population error
 * text, and the log-callback flag. Buffers are reused and freed when the thread exits.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capi.h"

typedef struct {
    char* buf;
    size_t length;
    size_t capacity;
} ovs_text_t;

typedef struct {
    ovs_text_t last_error;
    ovs_text_t population_error;
    uintptr_t wait_context;
    uint64_t* wait_ids;
    ovs_text_t* wait_texts;
    unsigned char* wait_released;
    size_t wait_count;
    size_t wait_capacity;
    int in_log_callback;
} ovs_thread_state_t;

static _Thread_local ovs_thread_state_t* tls;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void free_state(void* p)
{
    ovs_thread_state_t* st = (ovs_thread_state_t*)p;
    size_t i;
    if (st == NULL) {
        return;
    }
    free(st->last_error.buf);
    free(st->population_error.buf);
    for (i = 0; i < st->wait_capacity; ++i) {
        free(st->wait_texts[i].buf);
    }
    free(st->wait_ids);
    free(st->wait_texts);
    free(st->wait_released);
    free(st);
    tls = NULL;
}

static void make_key(void) { (void)pthread_key_create(&tls_key, free_state); }

/* The calling thread's state; NULL only when memory is exhausted. */
static ovs_thread_state_t* state(void)
{
    if (tls == NULL) {
        (void)pthread_once(&tls_once, make_key);
        tls = (ovs_thread_state_t*)calloc(1, sizeof(ovs_thread_state_t));
        if (tls != NULL) {
            (void)pthread_setspecific(tls_key, tls);
        }
    }
    return tls;
}

/* Copies text into t (NUL-terminated); on allocation failure t keeps a truncated copy. */
static void set_text(ovs_text_t* t, const char* text, size_t length)
{
    if (length + 1 > t->capacity) {
        char* grown = (char*)realloc(t->buf, length + 1);
        if (grown == NULL) {
            length = t->capacity > 0 ? t->capacity - 1 : 0;
        } else {
            t->buf = grown;
            t->capacity = length + 1;
        }
    }
    if (t->buf != NULL) {
        memcpy(t->buf, text, length);
        t->buf[length] = '\0';
    }
    t->length = t->buf != NULL ? length : 0;
}

static ovx_string_t view(const ovs_text_t* t)
{
    ovx_string_t s = {NULL, 0};
    if (t->length > 0) {
        s.ptr = t->buf;
        s.length = t->length;
    }
    return s;
}

void ovs_enter(void)
{
    if (tls != NULL) {
        tls->last_error.length = 0;
    }
}

void ovs_set_last_error(const char* text, size_t length)
{
    ovs_thread_state_t* st = state();
    if (st != NULL) {
        set_text(&st->last_error, text, length);
    }
}

OVSTAGE_API ovx_string_t ovstage_get_last_error(void)
{
    ovx_string_t none = {NULL, 0};
    return tls != NULL ? view(&tls->last_error) : none;
}

void ovs_set_population_error(const char* text)
{
    ovs_thread_state_t* st = state();
    if (st != NULL) {
        set_text(&st->population_error, text, strlen(text));
    }
}

OVSTAGE_API ovx_string_t ovstage_population_get_last_error(void)
{
    ovx_string_t none = {NULL, 0};
    return tls != NULL ? view(&tls->population_error) : none;
}

void ovs_wait_reset(uintptr_t context)
{
    ovs_thread_state_t* st = state();
    if (st != NULL) {
        st->wait_context = context;
        st->wait_count = 0;
    }
}

void ovs_wait_add(uint64_t op_id, const char* text, size_t length)
{
    ovs_thread_state_t* st = state();
    if (st == NULL) {
        return;
    }
    if (st->wait_count == st->wait_capacity) {
        size_t cap = st->wait_capacity == 0 ? 4 : 2 * st->wait_capacity;
        uint64_t* ids = (uint64_t*)realloc(st->wait_ids, cap * sizeof *ids);
        ovs_text_t* texts;
        unsigned char* released;
        if (ids == NULL) {
            return;
        }
        st->wait_ids = ids;
        texts = (ovs_text_t*)realloc(st->wait_texts, cap * sizeof *texts);
        if (texts == NULL) {
            return;
        }
        memset(texts + st->wait_capacity, 0, (cap - st->wait_capacity) * sizeof *texts);
        st->wait_texts = texts;
        released = (unsigned char*)realloc(st->wait_released, cap);
        if (released == NULL) {
            return;
        }
        st->wait_released = released;
        st->wait_capacity = cap;
    }
    st->wait_ids[st->wait_count] = op_id;
    set_text(&st->wait_texts[st->wait_count], text, length);
    st->wait_released[st->wait_count] = 0;
    st->wait_count++;
}

const uint64_t* ovs_wait_ids(size_t* count)
{
    ovs_thread_state_t* st = tls;
    *count = st != NULL ? st->wait_count : 0;
    return st != NULL ? st->wait_ids : NULL;
}

void ovs_wait_forget(uintptr_t context, uint64_t op_id)
{
    ovs_thread_state_t* st = tls;
    size_t i;
    if (st == NULL || st->wait_context != context) {
        return;
    }
    for (i = 0; i < st->wait_count; ++i) {
        if (st->wait_ids[i] == op_id) {
            st->wait_released[i] = 1;
        }
    }
}

/* get_last_op_error slot: the text of an op the thread's latest wait_op listed. */
ovx_string_t ovs_slot_get_last_op_error(ovstage_context_t* context, ovstage_op_id_t op_id)
{
    ovs_thread_state_t* st = tls;
    ovx_string_t none = {NULL, 0};
    size_t i;
    if (st == NULL || st->wait_context != (uintptr_t)context) {
        return none;
    }
    for (i = 0; i < st->wait_count; ++i) {
        if (st->wait_ids[i] == op_id && !st->wait_released[i]) {
            return view(&st->wait_texts[i]);
        }
    }
    return none;
}

int ovs_in_log_callback(void) { return tls != NULL && tls->in_log_callback; }

void ovs_invoke_log(uintptr_t callback, int32_t severity, double timestamp, const char* text,
                    size_t length, void* user_data)
{
    ovstage_log_callback_t fn = (ovstage_log_callback_t)callback;
    ovs_thread_state_t* st = state();
    ovx_string_t message;
    message.ptr = text;
    message.length = length;
    if (st != NULL) {
        st->in_log_callback = 1;
    }
    fn((ovstage_log_severity_t)severity, timestamp, message, user_data);
    if (st != NULL) {
        st->in_log_callback = 0;
    }
}

/*
 * Allocations that live as long as the library (the token texts get_strings_from_tokens hands
 * out): kept reachable from C so leak checkers see them as held, not lost.
 */
static void** retained;
static size_t retained_count, retained_capacity;
static pthread_mutex_t retained_mu = PTHREAD_MUTEX_INITIALIZER;

void ovs_retain_forever(void* p)
{
    pthread_mutex_lock(&retained_mu);
    if (retained_count == retained_capacity) {
        size_t cap = retained_capacity == 0 ? 64 : 2 * retained_capacity;
        void** grown = (void**)realloc(retained, cap * sizeof *grown);
        if (grown != NULL) {
            retained = grown;
            retained_capacity = cap;
        }
    }
    if (retained_count < retained_capacity) {
        retained[retained_count++] = p;
    }
    pthread_mutex_unlock(&retained_mu);
}
