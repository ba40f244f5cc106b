/*
 * producer-consumer: a producer thread writes sensor frames ahead at its own rate while a
 * consumer thread reads the latest sealed frame at another rate.
 *
 * The producer never waits for its writes: per frame it enqueues two attributes at the frame's
 * ordinal and a floor advance sealing it, goes on, and now and then polls its pending ops with
 * zero-timeout wait_op calls, releasing the finished ones. The consumer asks for the write
 * floor, reads at that floor (what is sealed), and checks that every read is one whole frame, no older than
 * the floor it saw before the read, and that frames never go backwards.
 *
 * Which frames the consumer happens to see depends on timing, so only totals, the checks and
 * the final state are printed: the output is the same on every run.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <ovstage/ovstage.h>
#include <ovx/path_dictionary/path_dictionary_utils.h>

#define SENSORS 8
#define FRAMES 120
#define PRODUCER_PERIOD_NS 2000000L /* one frame every 2 ms */
#define CONSUMER_PERIOD_NS 5000000L /* one look every 5 ms */

/* Returns from the calling function with the status when it is not OK. */
/* Reads retried while the floor moves on under them (each retry sees a newer floor). */
#define MAX_READ_ATTEMPTS 10000

#define TRY(expr)                                                                              \
    do {                                                                                       \
        ovstage_api_status_t try_status_ = (expr);                                             \
        if (try_status_ != OVSTAGE_OK) {                                                       \
            return try_status_;                                                                \
        }                                                                                      \
    } while (0)

/* What both threads share. The instance may be used from any thread. */
typedef struct {
    ovstage_instance_t* inst;
    ovstage_query_handle_t query;
    ovx_primpath_t sensors[SENSORS]; /* the query's prims */
    ovx_token_t temperature;
    ovx_token_t position;
    atomic_bool first_sealed; /* set by the producer once frame 1 is readable */
    atomic_bool producer_done;
} shared_t;

/* The readings of sensor s at frame f: temperature 20 + f + s/2 and position (f, s, -f). */
static float temperature_of(int frame, int sensor) { return 20.0f + (float)frame + 0.5f * (float)sensor; }
static void position_of(int frame, int sensor, float out[3])
{
    out[0] = (float)frame;
    out[1] = (float)sensor;
    out[2] = -(float)frame;
}

/* Prints the calling thread's last error (each thread has its own). */
static ovstage_api_status_t report(const char* what, ovstage_api_status_t status)
{
    ovx_string_t e = ovstage_get_last_error();
    fprintf(stderr, "%s: status %d: %.*s\n", what, (int)status, (int)e.length,
            e.ptr != NULL ? e.ptr : "");
    return status;
}

/*
 * Waits for an op (timeout in ns; 0 polls) and, once it is done, releases it. Returns OK when
 * it completed, TIMEOUT while it is pending, and otherwise the failure after printing why.
 */
static ovstage_api_status_t finish(ovstage_instance_t* inst, const char* what,
                                   ovstage_op_id_t op, ovstage_timeout_ns_t timeout)
{
    ovstage_op_wait_result_t waited;
    ovstage_api_status_t status = ovstage_wait_op(inst, op, timeout, &waited), released;
    size_t i;
    if (status == OVSTAGE_ERROR_TIMEOUT) {
        return status; /* still pending: never release it then */
    }
    if (status == OVSTAGE_ERROR_OP_FAILED) {
        for (i = 0; i < waited.error_op_id_count; ++i) {
            ovx_string_t m = ovstage_get_last_op_error(inst, waited.error_op_ids[i]);
            fprintf(stderr, "%s: op %llu failed: %.*s\n", what,
                    (unsigned long long)waited.error_op_ids[i], (int)m.length,
                    m.ptr != NULL ? m.ptr : "");
        }
    } else if (status != OVSTAGE_OK) {
        return report(what, status);
    }
    released = ovstage_release_op(inst, op);
    if (released != OVSTAGE_OK) {
        return report("ovstage_release_op", released);
    }
    return status;
}

/* Enqueue-check-wait: a rejected enqueue (op id 0) reports itself, an accepted one is waited. */
static ovstage_api_status_t complete(ovstage_instance_t* inst, const char* what,
                                     ovstage_enqueue_result_t enqueued)
{
    if (enqueued.status != OVSTAGE_OK) {
        return report(what, enqueued.status);
    }
    return finish(inst, what, enqueued.op_index, OVSTAGE_TIMEOUT_INFINITE);
}

static void sleep_ns(long ns)
{
    struct timespec t = {0, ns};
    nanosleep(&t, NULL);
}

/* ---- the producer ---------------------------------------------------------------------- */

typedef struct {
    shared_t* shared;
    /* Client-managed payloads (values, descriptors, shapes) stay alive until their op
     * completes: one set per frame. */
    float temperature[FRAMES + 1][SENSORS];
    float position[FRAMES + 1][SENSORS][3];
    DLTensor tensors[FRAMES + 1][2];
    int64_t shapes[FRAMES + 1][2][1];
    ovstage_op_id_t pending[3 * FRAMES]; /* submitted and not yet released */
    size_t pending_count;
    int writes;
    ovstage_api_status_t status;
} producer_t;

/* Keeps the op of an accepted enqueue among the pending ones; a rejected one reports itself. */
static ovstage_api_status_t submit(producer_t* p, ovstage_enqueue_result_t enqueued,
                                   const char* what)
{
    if (enqueued.status != OVSTAGE_OK) {
        return report(what, enqueued.status);
    }
    p->pending[p->pending_count++] = enqueued.op_index;
    return OVSTAGE_OK;
}

/* Polls every pending op (timeout: 0 polls, INFINITE drains) and keeps those still running. */
static ovstage_api_status_t release_finished(producer_t* p, ovstage_timeout_ns_t timeout)
{
    size_t i, kept = 0;
    for (i = 0; i < p->pending_count; ++i) {
        ovstage_api_status_t status = finish(p->shared->inst, "producer op", p->pending[i], timeout);
        if (status == OVSTAGE_ERROR_TIMEOUT) {
            p->pending[kept++] = p->pending[i];
        } else if (status != OVSTAGE_OK) {
            return status;
        }
    }
    p->pending_count = kept;
    return OVSTAGE_OK;
}

static ovstage_api_status_t produce_frame(producer_t* p, int frame)
{
    shared_t* s = p->shared;
    ovstage_write_data_t data[2];
    ovx_string_or_token_t attributes[2] = {{s->temperature, {NULL, 0}}, {s->position, {NULL, 0}}};
    ovstage_write_floor_desc_t seal = {(ovstage_ordinal_t)frame, OVSTAGE_SCOPE_ALL, NULL, 0};
    int sensor, a;

    for (sensor = 0; sensor < SENSORS; ++sensor) {
        p->temperature[frame][sensor] = temperature_of(frame, sensor);
        position_of(frame, sensor, p->position[frame][sensor]);
    }
    for (a = 0; a < 2; ++a) {
        DLTensor t = {a == 0 ? (void*)p->temperature[frame] : (void*)p->position[frame],
                      {kDLCPU, 0},
                      1,
                      {kDLFloat, 32, (uint16_t)(a == 0 ? 1 : 3)}, /* position: a float3 */
                      p->shapes[frame][a],
                      NULL,
                      0};
        p->shapes[frame][a][0] = SENSORS;
        p->tensors[frame][a] = t;
        memset(&data[a], 0, sizeof data[a]);
        data[a].tensors = &p->tensors[frame][a];
        data[a].tensor_count = 1;
        TRY(submit(p,
                   ovstage_write_attribute(s->inst, s->query, attributes[a],
                                           (ovstage_ordinal_t)frame, data[a],
                                           OVSTAGE_PRIM_MODE_UPSERT),
                   "ovstage_write_attribute"));
        p->writes++;
    }
    /* The advance seals both writes of the frame at once: a read sees both or neither. */
    return submit(p, ovstage_advance_write_floor(s->inst, &seal), "ovstage_advance_write_floor");
}

static void* producer_main(void* arg)
{
    producer_t* p = (producer_t*)arg;
    int frame;
    p->status = OVSTAGE_OK;
    for (frame = 1; frame <= FRAMES && p->status == OVSTAGE_OK; ++frame) {
        p->status = produce_frame(p, frame);
        if (p->status == OVSTAGE_OK && frame == 1) {
            /* The consumer starts once something is sealed: drain frame 1. */
            p->status = release_finished(p, OVSTAGE_TIMEOUT_INFINITE);
            atomic_store(&p->shared->first_sealed, true);
        } else if (p->status == OVSTAGE_OK) {
            p->status = release_finished(p, 0); /* poll, never block */
        }
        sleep_ns(PRODUCER_PERIOD_NS);
    }
    if (p->status == OVSTAGE_OK) {
        p->status = release_finished(p, OVSTAGE_TIMEOUT_INFINITE); /* drain */
    }
    atomic_store(&p->shared->first_sealed, true); /* even after a failure: never strand it */
    atomic_store(&p->shared->producer_done, true);
    return NULL;
}

/* ---- the consumer ---------------------------------------------------------------------- */

typedef struct {
    shared_t* shared;
    int reads;
    int last_frame;
    bool backwards;    /* a read saw an older frame than the read before it */
    bool inconsistent; /* a read mixed frames or had values no frame has */
    bool stale;        /* a read saw a frame older than the floor fetched before it */
    float final_temperature[SENSORS];
    float final_position[SENSORS][3];
    ovstage_api_status_t status;
} consumer_t;

/* The global write floor: an ordinal query, fetched, then released. */
static ovstage_api_status_t write_floor(shared_t* s, ovstage_ordinal_t* out)
{
    ovx_string_or_token_t all = {OVX_INVALID_TOKEN, {NULL, 0}}; /* no attribute: the global floor */
    ovstage_ordinal_query_handle_t handle = OVSTAGE_INVALID_ORDINAL_QUERY_HANDLE;
    ovstage_api_status_t status;
    TRY(complete(s->inst, "ovstage_get_attribute_write_floor",
                 ovstage_get_attribute_write_floor(s->inst, all, &handle)));
    status = ovstage_fetch_ordinal(s->inst, handle, OVSTAGE_TIMEOUT_INFINITE, out);
    if (status != OVSTAGE_OK) {
        report("ovstage_fetch_ordinal", status);
    }
    TRY(complete(s->inst, "ovstage_release_ordinal_query",
                 ovstage_release_ordinal_query(s->inst, handle)));
    return status;
}

/* The sensor that entry `entry` of path list `list` names; SENSORS if none. */
static uint32_t sensor_of(shared_t* s, ovx_primpath_list_t list, uint32_t entry)
{
    path_dictionary_instance_t* dictionary = ovstage_get_path_dictionary(s->inst);
    ovx_primpath_t path = OVX_INVALID_PRIMPATH;
    size_t got = 0;
    uint32_t i;
    ovx_api_result_t r =
        path_dictionary_get_paths_from_path_list(dictionary, list, entry, 1, &path, &got);
    if (r.status != OVX_API_SUCCESS) {
        path_dictionary_release_error(dictionary, r.error);
        return SENSORS;
    }
    for (i = 0; i < SENSORS && s->sensors[i] != path; ++i) {
    }
    return i;
}

/*
 * Reads the temperature and position of every sensor as of ordinal `at` into c->final_*.
 * `at` must be sealed: a read at an ordinal whose changes are still above the write floor is
 * refused (that snapshot is not decided yet), so the consumer reads at the floor it fetched.
 * The stage keeps only the newest sealed value of each cell, so when the producer has sealed a
 * newer frame in between, the snapshot at `at` is gone and the read reports OUT_OF_RANGE
 * (returned here quietly: the caller fetches the floor again and retries).
 */
static ovstage_api_status_t read_at(consumer_t* c, ovstage_ordinal_t at)
{
    shared_t* s = c->shared;
    ovx_token_t attributes[2] = {s->temperature, s->position};
    ovstage_ordinal_range_t latest = {0, at, false};
    ovstage_read_handle_t read = OVSTAGE_INVALID_READ_HANDLE;
    ovstage_read_group_t group;
    ovstage_api_status_t status;
    uint32_t k;

    ovstage_enqueue_result_t enqueued =
        ovstage_read_attributes(s->inst, s->query, attributes, 2, latest, &read);
    if (enqueued.status == OVSTAGE_ERROR_OUT_OF_RANGE) {
        return enqueued.status; /* decided at once: the frame at `at` was already replaced */
    }
    if (enqueued.status != OVSTAGE_OK) {
        return report("ovstage_read_attributes", enqueued.status);
    }
    /* fetch_read_next waits for the read; a failed read hands out its own status. */
    while ((status = ovstage_fetch_read_next(s->inst, read, OVSTAGE_TIMEOUT_INFINITE, &group)) ==
           OVSTAGE_OK) {
        const DLTensor* t = &group.data.tensors[0];
        const float* base = (const float*)((const char*)t->data + t->byte_offset);
        int lanes = group.attribute == s->position ? 3 : 1;
        /* Read tensors have scalar lanes; a float3 column is [R, 3] with strides [3, 1]. */
        int64_t width = t->ndim > 1 ? t->shape[1] : 1;
        int64_t stride = t->strides != NULL ? t->strides[0] : width; /* floats per row */
        /* Prims and rows are mapped as in examples/c/minimal. */
        for (k = 0; k < group.prims.count; ++k) {
            uint32_t entry = group.prims.index_map ? group.prims.index_map[k] : group.prims.offset + k;
            uint32_t prim = sensor_of(s, group.prims.list, entry);
            const float* row = base + (group.data.index_map ? group.data.index_map[k] : k) * stride;
            if (prim >= SENSORS || t->dtype.lanes != 1 || width != lanes) {
                c->inconsistent = true;
            } else if (lanes == 1) {
                c->final_temperature[prim] = row[0];
            } else {
                memcpy(c->final_position[prim], row, sizeof c->final_position[prim]);
            }
        }
        TRY(ovstage_release_group(s->inst, &group)); /* after copying out what we need */
    }
    if (status == OVSTAGE_ERROR_OUT_OF_RANGE) {
        /* The read op failed with it: release the op and the read, then let the caller retry. */
        ovstage_op_wait_result_t waited;
        (void)ovstage_wait_op(s->inst, enqueued.op_index, OVSTAGE_TIMEOUT_INFINITE, &waited);
        TRY(ovstage_release_op(s->inst, enqueued.op_index));
        TRY(complete(s->inst, "ovstage_release_read", ovstage_release_read(s->inst, read)));
        return status;
    }
    if (status != OVSTAGE_ERROR_END_OF_ITERATION) {
        return report("ovstage_fetch_read_next", status);
    }
    TRY(finish(s->inst, "ovstage_read_attributes", enqueued.op_index, OVSTAGE_TIMEOUT_INFINITE));
    return complete(s->inst, "ovstage_release_read", ovstage_release_read(s->inst, read));
}

/* The frame the values read belong to, or -1 if they are not one whole frame. */
static int frame_of(const consumer_t* c)
{
    int frame = (int)(c->final_temperature[0] - 20.0f + 0.5f), sensor;
    for (sensor = 0; sensor < SENSORS; ++sensor) {
        float p[3];
        position_of(frame, sensor, p);
        if (c->final_temperature[sensor] != temperature_of(frame, sensor) ||
            memcmp(c->final_position[sensor], p, sizeof p) != 0) {
            return -1;
        }
    }
    return frame;
}

static ovstage_api_status_t consume_once(consumer_t* c)
{
    ovstage_ordinal_t floor = 0;
    ovstage_api_status_t status;
    int frame, attempt;
    /* Retry while the producer seals a newer frame between the floor query and the read. */
    for (attempt = 0;; ++attempt) {
        TRY(write_floor(c->shared, &floor));
        status = read_at(c, floor);
        if (status != OVSTAGE_ERROR_OUT_OF_RANGE) {
            break;
        }
        if (attempt == MAX_READ_ATTEMPTS) {
            return report("ovstage_read_attributes (the floor kept moving)", status);
        }
    }
    TRY(status);
    frame = frame_of(c);
    c->reads++;
    c->inconsistent |= frame < 0;
    c->stale |= frame < (int)floor;
    c->backwards |= frame < c->last_frame;
    if (frame > c->last_frame) {
        c->last_frame = frame;
    }
    return OVSTAGE_OK;
}

static void* consumer_main(void* arg)
{
    consumer_t* c = (consumer_t*)arg;
    while (!atomic_load(&c->shared->first_sealed)) {
        sleep_ns(1000000);
    }
    /* At least one look, then one every CONSUMER_PERIOD_NS while the producer runs. */
    do {
        c->status = consume_once(c);
        sleep_ns(CONSUMER_PERIOD_NS);
    } while (c->status == OVSTAGE_OK && !atomic_load(&c->shared->producer_done));
    return NULL;
}

/* ---- main ------------------------------------------------------------------------------ */

static const char* yes_no(bool v) { return v ? "yes" : "no"; }

static int run(shared_t* s)
{
    static producer_t producer; /* large (the frames' payloads): not on the stack */
    static consumer_t consumer;
    pthread_t threads[2];
    int frame, sensor, reads_while_running;

    producer.shared = s;
    consumer.shared = s;
    if (pthread_create(&threads[0], NULL, producer_main, &producer) != 0) {
        fprintf(stderr, "cannot start the producer thread\n");
        return 1;
    }
    if (pthread_create(&threads[1], NULL, consumer_main, &consumer) != 0) {
        fprintf(stderr, "cannot start the consumer thread\n");
        atomic_store(&s->first_sealed, true);
        pthread_join(threads[0], NULL);
        return 1;
    }
    pthread_join(threads[0], NULL);
    pthread_join(threads[1], NULL);
    if (producer.status != OVSTAGE_OK || consumer.status != OVSTAGE_OK) {
        return 1;
    }
    /* Everything is sealed now: the last look sees the last frame. */
    reads_while_running = consumer.reads;
    if (consume_once(&consumer) != OVSTAGE_OK) {
        return 1;
    }
    frame = frame_of(&consumer);

    printf("producer: %d frames, %d writes and %d floor advances submitted ahead, all completed\n",
           FRAMES, producer.writes, FRAMES);
    printf("consumer: read at least one frame while the producer ran: %s\n",
           yes_no(reads_while_running > 0));
    printf("consumer: frames never went backwards: %s\n", yes_no(!consumer.backwards));
    printf("consumer: every read was one whole sealed frame: %s\n",
           yes_no(!consumer.inconsistent));
    printf("consumer: no read was older than the floor fetched before it: %s\n",
           yes_no(!consumer.stale));
    printf("final frame: %d\n", frame);
    printf("final temperature:");
    for (sensor = 0; sensor < SENSORS; ++sensor) {
        printf(" %.1f", consumer.final_temperature[sensor]);
    }
    printf("\nfinal position of sensor 7: [%.1f, %.1f, %.1f]\n", consumer.final_position[7][0],
           consumer.final_position[7][1], consumer.final_position[7][2]);
    return frame == FRAMES && !consumer.backwards && !consumer.inconsistent && !consumer.stale
               ? 0
               : 1;
}

int main(void)
{
    static const char* const sensor_paths[SENSORS] = {
        "/Robot/sensor0", "/Robot/sensor1", "/Robot/sensor2", "/Robot/sensor3",
        "/Robot/sensor4", "/Robot/sensor5", "/Robot/sensor6", "/Robot/sensor7"};
    ovstage_instance_desc_t desc = {"producer-consumer"};
    shared_t s;
    path_dictionary_instance_t* dictionary;
    ovx_string_t paths[SENSORS];
    ovx_string_t names[2] = {literal_to_ovx_string("temperature"),
                             literal_to_ovx_string("position")};
    ovx_token_t tokens[2] = {OVX_INVALID_TOKEN, OVX_INVALID_TOKEN};
    ovx_primpath_list_t list = OVX_INVALID_PRIMPATH_LIST;
    ovx_api_result_t dict;
    ovstage_api_status_t status;
    int exit_code = 1;
    size_t i;

    memset(&s, 0, sizeof s);
    atomic_init(&s.first_sealed, false);
    atomic_init(&s.producer_done, false);
    status = ovstage_create_instance(&desc, &s.inst);
    if (status != OVSTAGE_OK) {
        report("ovstage_create_instance", status);
        return 1;
    }
    dictionary = ovstage_get_path_dictionary(s.inst);
    for (i = 0; i < SENSORS; ++i) {
        paths[i].ptr = sensor_paths[i];
        paths[i].length = strlen(sensor_paths[i]);
    }
    dict = path_dictionary_create_paths_from_strings(dictionary, paths, SENSORS, s.sensors);
    if (dict.status == OVX_API_SUCCESS) {
        dict = path_dictionary_create_path_list_from_paths(dictionary, s.sensors, SENSORS, &list);
    }
    if (dict.status == OVX_API_SUCCESS) {
        dict = path_dictionary_create_tokens_from_strings(dictionary, names, 2, tokens);
    }
    if (dict.status != OVX_API_SUCCESS) {
        fprintf(stderr, "path dictionary: %.*s\n", (int)dict.error.length, dict.error.ptr);
        path_dictionary_release_error(dictionary, dict.error);
    } else if ((status = ovstage_query_from_path_list(s.inst, list, &s.query)) != OVSTAGE_OK) {
        report("ovstage_query_from_path_list", status);
    } else {
        s.temperature = tokens[0];
        s.position = tokens[1];
        exit_code = run(&s);
    }

    if (s.query != OVSTAGE_INVALID_QUERY_HANDLE &&
        complete(s.inst, "ovstage_release_query", ovstage_release_query(s.inst, s.query)) !=
            OVSTAGE_OK) {
        exit_code = 1;
    }
    if (list != OVX_INVALID_PRIMPATH_LIST) {
        dict = path_dictionary_release_path_list_reference(dictionary, list);
        if (dict.status != OVX_API_SUCCESS) {
            path_dictionary_release_error(dictionary, dict.error);
            exit_code = 1;
        }
    }
    if ((status = ovstage_destroy_instance(s.inst)) != OVSTAGE_OK) {
        report("ovstage_destroy_instance", status);
        exit_code = 1;
    }
    return exit_code;
}
