#!/usr/bin/env python3
"""Writes the small, synthetic example datasets under examples/*/data/.

Deterministic (fixed seeds): running it again gives byte-identical files.
Every dataset matches its plan's `source` and declared columns, and carries
a few realistic defects (out-of-domain categories, empty or unparsable
numbers) that the runtime must handle by the plan's `invalid_rows` rule.

    python3 examples/generate_data.py
"""

import csv
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))


def write(example, name, header, rows):
    path = os.path.join(HERE, example, "data", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    print(f"{path}: {len(rows)} rows")


def web_analytics():
    """400 users with 1–8 visits, and one bot with 500 visits to `home`."""
    r = random.Random(1)
    rows = []
    for u in range(400):
        uid = f"u{u:04d}"
        for _ in range(r.randint(1, 8)):
            page = r.choices(["home", "search", "checkout"], [5, 3, 1])[0]
            seconds = round(r.expovariate(1 / 90), 1)
            rows.append([uid, page, seconds])
    # the heavy user: a crawler hammering the home page, 500 visits of 2 s
    rows += [["bot-crawler", "home", 2.0] for _ in range(500)]
    # defects: a page outside the public domain, an empty and a bad number
    rows.append(["u0001", "admin", 12.0])
    rows.append(["u0002", "search", ""])
    rows.append(["u0003", "home", "n/a"])
    rows.append(["", "home", 5.0])
    r.shuffle(rows)
    write("web-analytics", "visits.csv", ["user_id", "page", "seconds"], rows)


def app_events():
    r = random.Random(2)
    rows = []
    for d in range(150):
        did = f"dev-{d:03d}"
        for _ in range(r.randint(1, 20)):
            screen = r.choices(["feed", "profile", "settings", "search"], [6, 2, 1, 3])[0]
            latency = round(r.lognormvariate(4.5, 0.6), 2)  # ms, a few above 2000
            rows.append([did, screen, latency])
    rows.append(["dev-000", "onboarding", 80.0])
    rows.append(["dev-001", "feed", "NaN"])
    r.shuffle(rows)
    write("app-events", "events.csv", ["device_id", "screen", "latency"], rows)


def census():
    r = random.Random(3)
    rows = []
    for _ in range(3000):
        rows.append([
            r.choices(["north", "south", "east", "west", "centre"], [3, 3, 2, 2, 4])[0],
            r.choices(["0-17", "18-34", "35-64", "65+"], [2, 3, 4, 2])[0],
            r.choices(["owner", "renter", "other"], [6, 3, 1])[0],
            min(12, max(1, int(r.gauss(4.5, 1.8)))),
        ])
    rows.append(["north", "35-64", "owner", "NA"])
    rows.append(["atlantis", "18-34", "renter", 3])
    write("census", "persons.csv", ["region", "age_band", "tenure", "rooms"], rows)


def repeated_release():
    r = random.Random(4)
    rows = [[1 if r.random() < 0.37 else 0] for _ in range(1000)]
    write("repeated-release", "responses.csv", ["answer"], rows)


def retail_mixed():
    r = random.Random(5)
    rows = []
    for c in range(600):
        cid = f"c{c:05d}"
        home = r.choice(["online", "downtown", "airport", "mall"])
        for _ in range(r.randint(1, 7)):
            store = home if r.random() < 0.7 else r.choice(["online", "downtown", "airport", "mall"])
            items = r.randint(1, 12)
            amount = round(items * r.uniform(3, 40), 2)
            rows.append([cid, store, amount, items])
    rows.append(["c00001", "online", 99999.0, 25])  # above both bounds: clamped
    r.shuffle(rows)
    write("retail-mixed", "orders.csv", ["customer_id", "store", "amount", "items"], rows)


def accuracy_targets():
    """300 commuters with 1–4 trips each: a mode of transport and a distance."""
    r = random.Random(6)
    rows = []
    for u in range(300):
        uid = f"c{u:03d}"
        for _ in range(r.randint(1, 4)):
            mode = r.choices(["walk", "bike", "bus", "car"], [2, 2, 3, 4])[0]
            km = min(60, max(0, int(r.expovariate(1 / 9))))  # a few above 50
            rows.append([uid, mode, km])
    rows.append(["c001", "boat", 3])
    rows.append(["c002", "bus", ""])
    r.shuffle(rows)
    write("accuracy-targets", "trips.csv", ["user_id", "mode", "km"], rows)


def ride_sharing():
    """A week of trips from 2026-03-02 (UTC): 300 riders with 1–20 trips,
    in three cities; `started_at` is an ISO 8601 UTC timestamp and
    `hour_of_day` its hour. Defects: a district outside the domain, a NaN
    fare, an empty length, trips longer than the last bin edge, an empty
    rider id."""
    r = random.Random(7)
    start = 1772409600  # 2026-03-02T00:00:00Z
    districts = ["centro", "norte", "sur", "este", "oeste"]
    rows = []
    for u in range(300):
        rider = f"rider-{u:04d}"
        city = r.choices(["Madrid", "Barcelona", "Valencia"], [5, 3, 2])[0]
        for _ in range(r.randint(1, 20)):
            t = start + r.randrange(7 * 86400 // 300) * 300
            hour = (t % 86400) // 3600
            district = r.choice(districts)
            length = round(r.lognormvariate(1.0, 0.8), 2)  # km, a few above 20
            fare = round(2.5 + 1.1 * length + r.uniform(0, 3), 2)
            stamp = "%04d-%02d-%02dT%02d:%02d:00Z" % ((2026, 3, 2 + (t - start) // 86400, hour, (t % 3600) // 60))
            rows.append([rider, city, district, hour, fare, length, stamp])
    rows.append(["rider-0001", "Madrid", "aeropuerto", 9, 30.0, 15.0, "2026-03-03T09:10:00Z"])
    rows.append(["rider-0002", "Madrid", "centro", 10, "NaN", 3.0, "2026-03-03T10:40:00Z"])
    rows.append(["rider-0003", "Valencia", "sur", 11, 8.0, "", "2026-03-04T11:05:00Z"])
    rows.append(["", "Madrid", "norte", 12, 9.0, 2.0, "2026-03-04T12:00:00Z"])
    r.shuffle(rows)
    header = ["rider_id", "city", "district", "hour_of_day", "fare", "length_km", "started_at"]
    write("ride-sharing", "trips.csv", header, rows)


def trip_fares():
    """Taxi fares for the quantile example: 2,000 trips by 400 riders with
    1–8 trips each; fares lognormal around 12 (a few above the upper bound
    80, clamped by the runtime). Defects: an unparsable fare, an empty
    rider id."""
    r = random.Random(16)
    rows = []
    for u in range(400):
        rider = f"rider-{u:04d}"
        for _ in range(r.randint(1, 8)):
            fare = round(r.lognormvariate(2.5, 0.6), 2)
            rows.append([rider, fare])
    rows.append(["rider-0001", "n/a"])
    rows.append(["", 12.0])
    r.shuffle(rows)
    write("trip-fares", "trips.csv", ["rider_id", "fare"], rows)


def signups():
    """A year of daily sign-ups (2026): about 3,000 users, a tenth of them
    signing up twice; growth over the year, fewer on weekends."""
    import datetime

    r = random.Random(16)
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    rows = []
    for day in range(365):
        weekday = (start + datetime.timedelta(days=day)).weekday()
        rate = (4 + day / 60) * (0.6 if weekday >= 5 else 1.0)
        for _ in range(int(rate + r.random() * 4)):
            uid = f"s{len(rows):05d}"
            at = start + datetime.timedelta(days=day, seconds=r.randrange(86400))
            plan = "pro" if r.random() < 0.2 else "free"
            rows.append([uid, at.strftime("%Y-%m-%dT%H:%M:%SZ"), plan])
            if r.random() < 0.1 and day < 364:
                later = at + datetime.timedelta(days=r.randint(1, 30))
                if later.year == 2026:
                    rows.append([uid, later.strftime("%Y-%m-%dT%H:%M:%SZ"), plan])
    # defects: an unparsable time, an out-of-domain plan
    rows.append(["s99998", "not-a-time", "free"])
    rows.append(["s99999", "2026-03-02T10:00:00Z", "enterprise"])
    write("signups", "signups.csv", ["user_id", "signed_up_at", "plan"], rows)


def site_visits():
    """Visits by country and page for the partition-selection example:
    3,000 users with 1–6 visits each, countries and pages Zipf-distributed
    (60 country codes, 400 page paths) so that the tail has keys seen once
    or twice (which the threshold must hide), plus one user whose country
    and page no one else has."""
    r = random.Random(1616)
    countries = [f"C{i:02d}" for i in range(60)]
    c_weights = [1 / (i + 1) ** 1.3 for i in range(60)]
    pages = [f"/p/{i:03d}" for i in range(400)]
    p_weights = [1 / (i + 1) ** 1.1 for i in range(400)]
    rows = []
    for u in range(3000):
        uid = f"user-{u:05d}"
        home = r.choices(countries, c_weights)[0]
        for _ in range(r.randint(1, 6)):
            country = home if r.random() < 0.8 else r.choices(countries, c_weights)[0]
            page = r.choices(pages, p_weights)[0]
            rows.append([uid, country, page])
    rows.append(["user-lonely", "ZZ-ONLY-ONE-USER", "/secret-only-one-user"])
    rows.append(["", "C00", "/p/000"])
    r.shuffle(rows)
    write("site-visits", "visits.csv", ["user_id", "country", "page"], rows)


def news_sections():
    """Reads of a news site's 12 sections for the top-k example: 4,000
    readers with 1–8 reads each in 1–3 sections, sections Zipf-distributed
    so that the first ranks are clear and the middle ones close, plus a
    heavy reader with 300 reads of `science` (bounded to their share), a
    read of a section outside the public list and a row without a reader."""
    r = random.Random(2718)
    sections = ["politics", "sport", "business", "culture", "world", "science",
                "technology", "health", "travel", "food", "opinion", "weather"]
    weights = [1 / (i + 1) ** 0.9 for i in range(len(sections))]
    rows = []
    for u in range(4000):
        uid = f"reader-{u:05d}"
        mine = r.choices(sections, weights, k=r.randint(1, 3))
        for _ in range(r.randint(1, 8)):
            rows.append([uid, r.choice(mine)])
    rows.extend([["reader-heavy", "science"]] * 300)
    rows.append(["reader-00007", "horoscopes"])
    rows.append(["", "sport"])
    r.shuffle(rows)
    write("news-sections", "reads.csv", ["reader_id", "section"], rows)


def daily_panel():
    """Sessions of an app for the sampled-dashboard example: 12,000 users
    with 1–6 sessions each on 1–2 platforms (minutes skewed, a few over the
    120-minute bound), plus a heavy user with 400 sessions (bounded to
    their share), an unparsable number, a platform outside the public list
    and a row without a user."""
    r = random.Random(31415)
    platforms = ["ios", "android", "web"]
    rows = []
    for u in range(12000):
        uid = f"user-{u:05d}"
        mine = r.sample(platforms, r.randint(1, 2))
        for _ in range(r.randint(1, 6)):
            minutes = min(round(r.expovariate(1 / 18), 1), 180.0)
            rows.append([uid, r.choice(mine), minutes])
    rows.extend([["user-heavy", "web", 60.0]] * 400)
    rows.append(["user-00042", "ios", "n/a"])
    rows.append(["user-00043", "smart-tv", 12.0])
    rows.append(["", "android", 5.0])
    r.shuffle(rows)
    write("daily-panel", "sessions.csv", ["user_id", "platform", "minutes"], rows)


def hourly_logins():
    """Logins to a service, March 1–30, 2026, for the factorized running
    count: 1,200 users logging in 1–12 times at hours skewed to the
    daytime, a burst user with 300 logins in one hour (bounded to two),
    an unparsable time and a row without a user."""
    import datetime

    r = random.Random(2718)
    start = datetime.datetime(2026, 3, 1, tzinfo=datetime.timezone.utc)
    apps = ["web", "ios", "android"]
    rows = []
    for u in range(1200):
        uid = f"u{u:04d}"
        app = r.choice(apps)
        for _ in range(r.randint(1, 12)):
            day = r.randrange(30)
            hour = min(23, max(0, int(r.gauss(14, 4))))
            at = start + datetime.timedelta(
                days=day, hours=hour, seconds=r.randrange(3600)
            )
            rows.append([uid, at.strftime("%Y-%m-%dT%H:%M:%SZ"), app])
    burst = start + datetime.timedelta(days=9, hours=20)
    for i in range(300):
        at = burst + datetime.timedelta(seconds=i * 11)
        rows.append(["u-burst", at.strftime("%Y-%m-%dT%H:%M:%SZ"), "web"])
    rows.append(["u0007", "yesterday", "ios"])
    rows.append(["", "2026-03-04T10:00:00Z", "web"])
    r.shuffle(rows)
    write("hourly-logins", "logins.csv", ["user_id", "at", "app"], rows)


if __name__ == "__main__":
    web_analytics()
    app_events()
    census()
    repeated_release()
    retail_mixed()
    accuracy_targets()
    ride_sharing()
    trip_fares()
    signups()
    site_visits()
    news_sections()
    daily_panel()
    hourly_logins()
