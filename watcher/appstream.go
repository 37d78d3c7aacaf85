package watcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	kjson "sigs.k8s.io/json"

	"github.com/crowsnest-dev/crowsnest/internal/kuberest"
)

// appStream lists and watches Applications and keeps each one as the
// JSON of the trimmed form TrimApplication makes, cut out of the
// apiserver's bytes (reduceApp) with its view read once (decodeApp):
// nothing is built for the fields crowsnest never reads, and what it
// keeps is never decoded into maps nor encoded again. client-go's
// dynamic informer reads every watch event four times (framing, the
// event envelope, the object's kind, the object into maps) and builds
// maps for all of it, managedFields and status.resources included, only
// for the transform to drop them: a third of crowsnest's CPU on a cold
// start of 1,000 Applications (bench S2).
type appStream struct {
	// lists share the rate limiter of the config; watches, long-lived,
	// are not rate limited, as client-go's Request.Watch is not.
	lists, watches rest.Interface
	namespace      string
	selector       string
}

// appClients are the JSON REST clients of appListWatch.
type appClients struct{ lists, watches rest.Interface }

// newAppClients returns the clients for cfg: lists share cfg's rate
// limiter when it has one, watches take none.
func newAppClients(cfg *rest.Config) (appClients, error) {
	lists, err := kuberest.Client(cfg, "application/json")
	if err != nil {
		return appClients{}, fmt.Errorf("the Application watch: %w", err)
	}
	wc := rest.CopyConfig(cfg)
	wc.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	watches, err := kuberest.Client(wc, "application/json")
	if err != nil {
		return appClients{}, fmt.Errorf("the Application watch: %w", err)
	}
	return appClients{lists: lists, watches: watches}, nil
}

// appListWatch returns a ListerWatcher of the Applications in namespace
// (all for "") matching selector. The reflector LISTs through it, then
// watches; it does not ask for a streaming list (watch-list), though its
// watch decodes initial events like any other. Its LIST is already
// streamed, stored item by item and never whole in memory, so watch-list
// saves no memory here, and it is slower: the apiserver encodes and
// frames each Application as an event of its own, and the informer takes
// each through its watch path. S2's 1000 Applications were in the cache
// 0.27-0.38 s after start with a LIST, 0.36-0.49 s with watch-list.
func appListWatch(c appClients, namespace, selector string) cache.ListerWatcher {
	s := &appStream{lists: c.lists, watches: c.watches, namespace: namespace, selector: selector}
	return listThenWatch{&cache.ListWatch{ListWithContextFunc: s.list, WatchFuncWithContext: s.watch}}
}

// listThenWatch is a ListWatch the reflector does not ask for streaming
// lists (client-go's opt-out, the method below).
type listThenWatch struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported tells the reflector to LIST, then watch.
func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// paramCodec turns ListOptions into query parameters, as client-go's
// dynamic client does.
var paramCodec = func() runtime.ParameterCodec {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, versionV1)
	return runtime.NewParameterCodec(s)
}()

var versionV1 = schema.GroupVersion{Version: "v1"}

func (s *appStream) request(client rest.Interface, opts metav1.ListOptions) *rest.Request {
	opts.LabelSelector = s.selector
	segs := []string{"/apis", ApplicationsResource.Group, ApplicationsResource.Version}
	if s.namespace != "" {
		segs = append(segs, "namespaces", s.namespace)
	}
	segs = append(segs, ApplicationsResource.Resource)
	return client.Get().AbsPath(segs...).SpecificallyVersionedParams(&opts, paramCodec, versionV1)
}

// list reads one page of Applications, each stored (storedApp) as soon as
// it is read: the page is never whole in memory, neither as JSON nor as
// maps (a page served from the watch cache is every Application).
func (s *appStream) list(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	body, err := s.request(s.lists, opts).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = body.Close() }()
	out := &storedAppList{}
	if err := decodeList(kjson.NewDecoderCaseSensitivePreserveInts(body), out); err != nil {
		return nil, fmt.Errorf("decoding the list of Applications: %w", err)
	}
	return out, nil
}

// decodeList reads a list of Applications into out, item by item.
func decodeList(dec kjson.Decoder, out *storedAppList) error {
	if err := delim(dec, "{"); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch key, _ := tok.(string); key {
		case "apiVersion":
			err = dec.Decode(&out.APIVersion)
		case "kind":
			err = dec.Decode(&out.Kind)
		case "metadata":
			err = dec.Decode(&out.ListMeta)
		case "items":
			err = decodeItems(dec, out)
		default:
			var skip struct{}
			err = dec.Decode(&skip)
		}
		if err != nil && !isTypeError(err) {
			return fmt.Errorf("%s: %w", tok, err)
		}
	}
	return delim(dec, "}")
}

func decodeItems(dec kjson.Decoder, out *storedAppList) error {
	tok, err := dec.Token()
	if err != nil || tok == nil { // "items": null
		return err
	}
	if fmt.Sprint(tok) != "[" {
		return fmt.Errorf("%w: want a list of items, got %v", errBadWatchEvent, tok)
	}
	var scratch []byte
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		item, err := decodeApp(raw, false, &scratch)
		if err != nil {
			return err
		}
		out.Items = append(out.Items, item)
	}
	return delim(dec, "]")
}

// watch opens a watch (or a streaming list) of Applications.
func (s *appStream) watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	body, err := s.request(s.watches, opts).Stream(ctx)
	if err != nil {
		if utilnet.IsProbableEOF(err) || utilnet.IsTimeout(err) {
			// As client-go's Request.Watch: the reflector watches
			// again at once instead of backing off and listing.
			return watch.NewEmptyWatch(), nil
		}
		return nil, err
	}
	return watch.NewStreamWatcher(newAppEventDecoder(body),
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding")), nil
}

// appEventDecoder reads watch events ({"type": ..., "object": ...}) off a
// stream. It frames each event with jsonscan's scanner and stores its
// object with decodeApp.
type appEventDecoder struct {
	body io.ReadCloser
	buf  []byte // read and not yet framed: buf[off:]
	off  int
	err  error // the body's error, once buf is used up
	// scratch is where the object is reduced (reduceApp)
	scratch []byte
}

func newAppEventDecoder(body io.ReadCloser) *appEventDecoder {
	return &appEventDecoder{body: body, buf: make([]byte, 0, 32<<10)}
}

var errBadWatchEvent = errors.New("malformed watch event")

// Decode returns the next event. An io.EOF is the stream's normal end.
func (d *appEventDecoder) Decode() (watch.EventType, runtime.Object, error) {
	ev, err := d.next()
	if err != nil {
		return "", nil, err
	}
	var (
		typ                  watch.EventType
		typeErr              error
		objStart, objEnd     int
		hasObject, hasTypeOK bool
	)
	isObject, err := objectFields(ev, func(key []byte, s, e int) {
		switch string(key) {
		case "type":
			var t string
			if typeErr = kjson.UnmarshalCaseSensitivePreserveInts(ev[s:e], &t); typeErr == nil {
				typ, hasTypeOK = watch.EventType(t), true
			}
		case "object":
			objStart, objEnd, hasObject = s, e, true
		}
	})
	switch {
	case err != nil: // never: next checked the event's grammar
		return "", nil, fmt.Errorf("%w: %w", errBadWatchEvent, err)
	case !isObject:
		return "", nil, fmt.Errorf("%w: want an object, got %.20s", errBadWatchEvent, ev)
	case typeErr != nil:
		return "", nil, fmt.Errorf("%w: type: %w", errBadWatchEvent, typeErr)
	case !hasTypeOK:
		return "", nil, fmt.Errorf("%w: no type", errBadWatchEvent)
	}
	switch typ {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark, watch.Error:
	default:
		return "", nil, fmt.Errorf("%w: type %q", errBadWatchEvent, typ)
	}
	if !hasObject {
		return "", nil, fmt.Errorf("%w: %s event without an object", errBadWatchEvent, typ)
	}
	obj, err := decodeEventObject(ev[objStart:objEnd], typ, &d.scratch)
	if err != nil {
		return "", nil, err
	}
	return typ, obj, nil
}

// next returns the next whole JSON value of the stream, valid for
// until next is called again. The stream ending between values is
// io.EOF, inside one io.ErrUnexpectedEOF (watch.StreamWatcher then ends
// the watch quietly and the reflector watches again, as with client-go's
// own decoder); malformed JSON is errBadWatchEvent.
func (d *appEventDecoder) next() ([]byte, error) {
	for {
		start := skipSpace(d.buf, d.off)
		if start < len(d.buf) {
			end, err := skipValue(d.buf, start)
			if err == nil {
				d.off = end
				return d.buf[start:end], nil
			}
			if !errors.Is(err, errIncomplete) {
				return nil, fmt.Errorf("%w: %w", errBadWatchEvent, err)
			}
		}
		if d.err != nil {
			if errors.Is(d.err, io.EOF) && start < len(d.buf) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, d.err
		}
		// Keep what is left of the value at the start of buf and read
		// more after it.
		n := copy(d.buf, d.buf[start:])
		d.buf, d.off = d.buf[:n], 0
		if cap(d.buf)-n < 16<<10 {
			d.buf = append(d.buf[:cap(d.buf)], make([]byte, cap(d.buf))...)[:n]
		}
		m, err := d.body.Read(d.buf[n:cap(d.buf)])
		d.buf = d.buf[:n+m]
		d.err = err
	}
}

// Close ends the stream.
func (d *appEventDecoder) Close() { _ = d.body.Close() }

func delim(dec kjson.Decoder, want string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if fmt.Sprint(tok) != want {
		return fmt.Errorf("%w: want %q, got %v", errBadWatchEvent, want, tok)
	}
	return nil
}

// decodeEventObject reads an event's object, one whole JSON value: a
// Status for an ERROR event (client-go turns it into the apiserver's
// error, "resource version too old" among them), else an Application,
// trimmed and stored (storedApp).
func decodeEventObject(b []byte, typ watch.EventType, scratch *[]byte) (runtime.Object, error) {
	if typ == watch.Error {
		var st metav1.Status
		if err := kjson.UnmarshalCaseSensitivePreserveInts(b, &st); err != nil && !isTypeError(err) {
			return nil, failed("error status", err)
		}
		return &st, nil
	}
	s, err := decodeApp(b, typ == watch.Bookmark, scratch)
	if err != nil {
		return nil, failed("object", err)
	}
	return s, nil
}

// isTypeError reports a value of the wrong JSON type (a string where an
// object was expected). The decoder skips that value and decodes the
// rest. sigs.k8s.io/json's type is an alias of encoding/json's.
func isTypeError(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te)
}

// failed classifies an error reading part of an event. Malformed JSON (a
// syntax error, a value of the wrong type) is a bad event. Anything else
// is the stream's (a cut connection, a closed body) and is returned as it
// is, io.EOF made io.ErrUnexpectedEOF since it ended inside an event:
// watch.StreamWatcher then ends the watch quietly and the reflector
// watches again, as with client-go's own decoder.
func failed(part string, err error) error {
	if isSyntax, _ := kjson.SyntaxErrorOffset(err); isSyntax || isTypeError(err) || errors.Is(err, errNumberRange) {
		return fmt.Errorf("%w: %s: %w", errBadWatchEvent, part, err)
	}
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
